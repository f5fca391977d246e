// Tests of the redis sink against the machine's Redis (started if it is
// down; the tests fail, never skip, if it cannot be): option validation
// (22023 for a missing redis.url or primary_key and for a write mode
// other than upsert); upserts and deletes leave exactly the expected keys
// and JSON values; a replayed epoch changes nothing, even with different
// values and from a new sink instance; an epoch larger than one script
// transaction is applied in chunks and a half-applied one is completed by its
// replay; LastEpoch; an unreachable or silent server gives an error
// within bounded time. Every test uses its own key prefix and sink id
// and removes its keys.
package redis_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"sluice/connectors/redis"
	"sluice/exec/connector"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

const (
	redisAddr     = "127.0.0.1:6379"
	redisURL      = "redis://" + redisAddr + "/0"
	redisStartCmd = `redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no --dir /var/lib/redis --logfile /var/log/redis/ci.log`
)

var ensureMu sync.Mutex

// ensureRedis makes sure the machine's Redis answers PING, starting it if
// it does not (the logic of tests.EnsureRedis). It fails the test if it
// cannot.
func ensureRedis(t testing.TB) {
	t.Helper()
	ensureMu.Lock()
	defer ensureMu.Unlock()
	if pingRedis() == nil {
		return
	}
	for _, dir := range []string{"/var/lib/redis", "/var/log/redis"} {
		_ = os.MkdirAll(dir, 0o755)
	}
	out, err := exec.Command("sh", "-c", redisStartCmd).CombinedOutput()
	if err != nil {
		t.Fatalf("Redis is down and `%s` failed: %v\n%s", redisStartCmd, err, out)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := pingRedis()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Redis still down 30s after `%s` (%s): %v", redisStartCmd, out, err)
		}
		time.Sleep(100 * time.Millisecond) // polling, bounded by the deadline
	}
}

func pingRedis() error {
	conn, err := net.DialTimeout("tcp", redisAddr, 2*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.WriteString(conn, "PING\r\n"); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return fmt.Errorf("redis answered PING with %q", line)
	}
	return nil
}

var columns = []types.Column{
	{Name: "id", Type: types.TInt8},
	{Name: "region", Type: types.TText},
	{Name: "v", Type: types.TText},
	{Name: "score", Type: types.TFloat8},
}

func row(id int64, region, v string, score float64) types.Row {
	return types.Row{types.NewInt(id), types.NewString(region), types.NewString(v), types.NewFloat(score)}
}

// testSink returns a configuration with a sink name and id of its own and
// a client to look at Redis; the sink's keys are removed when the test ends.
func testSink(t testing.TB) (connector.SinkConfig, *goredis.Client) {
	t.Helper()
	ensureRedis(t)
	var b [8]byte
	_, _ = rand.Read(b[:])
	id := binary.LittleEndian.Uint64(b[:]) >> 1
	name := fmt.Sprintf("sluicetest_%x", id)
	cfg := connector.SinkConfig{
		Name:    name,
		ID:      id,
		Columns: columns,
		Key:     []int{0, 1},
		Options: map[string]string{"connector": "redis", "redis.url": redisURL, "primary_key": "id,region"},
	}
	c := goredis.NewClient(&goredis.Options{Addr: redisAddr})
	t.Cleanup(func() {
		ctx := context.Background()
		keys := []string{epochKey(cfg)}
		iter := c.Scan(ctx, 0, name+":*", 1000).Iterator()
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		for len(keys) > 0 {
			n := min(len(keys), 1000)
			if err := c.Del(ctx, keys[:n]...).Err(); err != nil {
				t.Errorf("cleaning up: %v", err)
			}
			keys = keys[n:]
		}
		c.Close()
	})
	return cfg, c
}

func epochKey(cfg connector.SinkConfig) string { return fmt.Sprintf("sluice:sink:%d:epoch", cfg.ID) }

func open(t testing.TB, cfg connector.SinkConfig) *redis.Sink {
	t.Helper()
	s, err := redis.Factory{}.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.(*redis.Sink)
}

func write(t testing.TB, s *redis.Sink, epoch uint64, changes ...connector.Change) {
	t.Helper()
	if err := s.Write(context.Background(), epoch, changes); err != nil {
		t.Fatalf("Write(epoch %d): %v", epoch, err)
	}
}

// contents returns every key of the sink with its value.
func contents(t testing.TB, c *goredis.Client, cfg connector.SinkConfig) map[string]string {
	t.Helper()
	ctx := context.Background()
	got := map[string]string{}
	var keys []string
	iter := c.Scan(ctx, 0, cfg.Name+":*", 1000).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	for len(keys) > 0 {
		n := min(len(keys), 1000)
		vals, err := c.MGet(ctx, keys[:n]...).Result()
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			s, _ := v.(string)
			got[strings.TrimPrefix(keys[i], cfg.Name+":")] = s
		}
		keys = keys[n:]
	}
	return got
}

func checkContents(t testing.TB, c *goredis.Client, cfg connector.SinkConfig, want map[string]string) {
	t.Helper()
	got := contents(t, c, cfg)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("key %s:%s = %q, want %q", cfg.Name, k, got[k], v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected key %s:%s = %q", cfg.Name, k, got[k])
		}
	}
}

func checkLastEpoch(t testing.TB, s *redis.Sink, want uint64) {
	t.Helper()
	got, err := s.LastEpoch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("LastEpoch = %d, want %d", got, want)
	}
}

func TestValidate(t *testing.T) {
	base := connector.SinkConfig{
		Name: "s", ID: 1, Columns: columns, Key: []int{0},
		Options: map[string]string{"connector": "redis", "redis.url": redisURL, "primary_key": "id"},
	}
	plan, err := redis.Factory{}.Validate(base)
	if err != nil {
		t.Fatal(err)
	}
	if plan.WriteMode != connector.ModeUpsert || plan.Guarantee != connector.ExactlyOnce || plan.Discard {
		t.Errorf("plan = %+v", plan)
	}
	base.WriteMode = "UPSERT"
	if _, err := (redis.Factory{}).Validate(base); err != nil {
		t.Errorf("write_mode UPSERT: %v", err)
	}
	for _, tc := range []struct {
		name   string
		change func(*connector.SinkConfig)
		code   pgcode.Code
		want   string
	}{
		{"no url", func(c *connector.SinkConfig) { delete(c.Options, "redis.url") }, pgcode.InvalidParameterValue, "redis.url"},
		{"bad url", func(c *connector.SinkConfig) { c.Options["redis.url"] = "http://x" }, pgcode.InvalidParameterValue, "redis.url"},
		{"no key", func(c *connector.SinkConfig) { c.Key = nil }, pgcode.InvalidParameterValue, "primary_key"},
		{"append", func(c *connector.SinkConfig) { c.WriteMode = "append" }, pgcode.InvalidParameterValue, "write_mode"},
		{"transactional", func(c *connector.SinkConfig) { c.WriteMode = "transactional" }, pgcode.InvalidParameterValue, "write_mode"},
		{"unknown option", func(c *connector.SinkConfig) { c.Options["redis.ulr"] = "x" }, pgcode.InvalidParameterValue, "redis.ulr"},
		{"csv", func(c *connector.SinkConfig) { c.Encode = "CSV" }, pgcode.FeatureNotSupported, "CSV"},
		{"debezium", func(c *connector.SinkConfig) { c.Format = "DEBEZIUM" }, pgcode.FeatureNotSupported, "DEBEZIUM"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			cfg.WriteMode = ""
			cfg.Options = map[string]string{}
			for k, v := range base.Options {
				cfg.Options[k] = v
			}
			tc.change(&cfg)
			for _, f := range []func() error{
				func() error { _, err := (redis.Factory{}).Validate(cfg); return err },
				func() error { _, err := (redis.Factory{}).Open(context.Background(), cfg); return err },
			} {
				err := f()
				if err == nil {
					t.Fatal("no error")
				}
				if code := pgerror.GetCode(err); code != tc.code || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("error %q (%s), want %s naming %s", err, code, tc.code, tc.want)
				}
			}
		})
	}
}

func TestUpsertAndDelete(t *testing.T) {
	cfg, c := testSink(t)
	s := open(t, cfg)
	checkLastEpoch(t, s, 0)

	write(t, s, 1,
		connector.Change{After: row(1, "eu", `a"b`, 1.5)},
		connector.Change{After: row(2, "us", "x", -2)},
		connector.Change{After: types.Row{types.NewInt(3), types.Null, types.Null, types.NewFloat(0.25)}},
	)
	checkContents(t, c, cfg, map[string]string{
		"1:eu": `{"id":1,"region":"eu","v":"a\"b","score":1.5}`,
		"2:us": `{"id":2,"region":"us","v":"x","score":-2}`,
		"3:":   `{"id":3,"region":null,"v":null,"score":0.25}`,
	})
	checkLastEpoch(t, s, 1)

	write(t, s, 2,
		connector.Change{Before: row(1, "eu", `a"b`, 1.5), After: row(1, "eu", "new", 7)},
		connector.Change{Before: row(2, "us", "x", -2)},
		connector.Change{After: row(4, "eu:west", "ü", 1e300)},
	)
	checkContents(t, c, cfg, map[string]string{
		"1:eu":      `{"id":1,"region":"eu","v":"new","score":7}`,
		"3:":        `{"id":3,"region":null,"v":null,"score":0.25}`,
		"4:eu:west": `{"id":4,"region":"eu:west","v":"ü","score":1e+300}`,
	})
	checkLastEpoch(t, s, 2)
	// A large epoch number is stored and compared exactly.
	write(t, s, 1<<63+5, connector.Change{Before: row(4, "eu:west", "ü", 1e300)})
	checkLastEpoch(t, s, 1<<63+5)
	write(t, s, 1<<63+4, connector.Change{Before: row(1, "eu", "new", 7)})
	if n := len(contents(t, c, cfg)); n != 2 {
		t.Errorf("%d keys after a delete of an older epoch, want 2", n)
	}
}

// TestReplayIsHarmless proves the guard: epoch 3 written again, by a new
// instance of the sink and with different values, changes nothing.
func TestReplayIsHarmless(t *testing.T) {
	cfg, c := testSink(t)
	a := row(1, "eu", "A", 1)
	b := row(1, "eu", "B", 2)
	s1 := open(t, cfg)
	write(t, s1, 3, connector.Change{After: a}, connector.Change{After: row(2, "eu", "A", 1)})
	want := contents(t, c, cfg)
	if len(want) != 2 {
		t.Fatalf("contents after epoch 3: %v", want)
	}
	s1.Close()

	s2 := open(t, cfg)
	checkLastEpoch(t, s2, 3)
	write(t, s2, 3, connector.Change{Before: a, After: b}, connector.Change{Before: row(2, "eu", "A", 1)},
		connector.Change{After: row(9, "eu", "B", 2)})
	write(t, s2, 2, connector.Change{Before: a, After: b})
	checkContents(t, c, cfg, want)
	checkLastEpoch(t, s2, 3)

	write(t, s2, 4, connector.Change{Before: a, After: b})
	want["1:eu"] = `{"id":1,"region":"eu","v":"B","score":2}`
	checkContents(t, c, cfg, want)
	checkLastEpoch(t, s2, 4)
}

// TestChunkedEpoch writes an epoch larger than one transaction, replays it
// with other values (nothing changes), and completes a half-applied epoch.
func TestChunkedEpoch(t *testing.T) {
	const chunk = 1000
	defer redis.SetMaxChunkChanges(chunk)()
	cfg, c := testSink(t)
	n := 2*chunk + 17
	changes := make([]connector.Change, n)
	for i := range changes {
		changes[i] = connector.Change{After: row(int64(i), "r", "first", float64(i))}
	}
	s := open(t, cfg)
	write(t, s, 7, changes...)
	checkLastEpoch(t, s, 7)
	got := contents(t, c, cfg)
	if len(got) != n {
		t.Fatalf("%d keys, want %d", len(got), n)
	}
	for _, i := range []int{0, chunk, n - 1} {
		want := fmt.Sprintf(`{"id":%d,"region":"r","v":"first","score":%d}`, i, i)
		if k := fmt.Sprintf("%d:r", i); got[k] != want {
			t.Errorf("%s = %q, want %q", k, got[k], want)
		}
	}

	other := make([]connector.Change, n)
	for i := range other {
		other[i] = connector.Change{Before: changes[i].After}
	}
	write(t, s, 7, other...)
	if m := len(contents(t, c, cfg)); m != n {
		t.Fatalf("replayed epoch 7 changed the key count to %d", m)
	}

	// A crash after the first chunk of epoch 8: its keys are written, the
	// epoch key still says 7. The replay of epoch 8 completes it.
	ctx := context.Background()
	var firstChunk []string
	for i := 0; i < chunk; i++ {
		firstChunk = append(firstChunk, fmt.Sprintf("%s:%d:r", cfg.Name, i))
	}
	if err := c.Del(ctx, firstChunk...).Err(); err != nil {
		t.Fatal(err)
	}
	write(t, s, 8, other...)
	checkLastEpoch(t, s, 8)
	if m := len(contents(t, c, cfg)); m != 0 {
		t.Fatalf("%d keys left after epoch 8 deleted all", m)
	}
}

// TestUnreachable checks that Write and LastEpoch fail within bounded time
// when nothing listens, and when a server accepts but never answers.
func TestUnreachable(t *testing.T) {
	defer redis.SetIOTimeout(300 * time.Millisecond)()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()

	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var conns []net.Conn
	var connsMu sync.Mutex
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := silent.Accept()
			if err != nil {
				return
			}
			connsMu.Lock()
			conns = append(conns, conn) // held open, never answered
			connsMu.Unlock()
		}
	}()
	defer func() {
		silent.Close()
		wg.Wait()
		for _, c := range conns {
			c.Close()
		}
	}()

	for _, addr := range []string{closed, silent.Addr().String()} {
		t.Run(addr, func(t *testing.T) {
			cfg := connector.SinkConfig{
				Name: "unreachable", ID: 1, Columns: columns, Key: []int{0},
				Options: map[string]string{"redis.url": "redis://" + addr + "/0"},
			}
			s := open(t, cfg)
			start := time.Now()
			err := s.Write(context.Background(), 1, []connector.Change{{After: row(1, "eu", "x", 1)}})
			if err == nil {
				t.Fatal("Write succeeded")
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("Write took %v", d)
			}
			if code := pgerror.GetCode(err); code != pgcode.ConnectionException {
				t.Errorf("Write error %q has code %s", err, code)
			}
			start = time.Now()
			if _, err := s.LastEpoch(context.Background()); err == nil {
				t.Error("LastEpoch succeeded")
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("LastEpoch took %v", d)
			}
		})
	}
}

// BenchmarkWrite100k writes epochs of 100k upserts of distinct keys.
func BenchmarkWrite100k(b *testing.B) {
	const n = 100_000
	cfg, _ := testSink(b)
	s := open(b, cfg)
	changes := make([]connector.Change, n)
	for i := range changes {
		changes[i] = connector.Change{After: row(int64(i), "bench", "some text value", float64(i)/3)}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		write(b, s, uint64(i+1), changes...)
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "changes/s")
}
