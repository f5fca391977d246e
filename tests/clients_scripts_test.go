package tests

// The clients of the matrix that run as scripts in tests/clients/: Python
// (psycopg2, psycopg 3, SQLAlchemy, pgcli) with Debian's /usr/bin/python3,
// Java (pgjdbc) compiled with javac, and JavaScript (node-postgres) with pg@8
// from a cache directory.

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// debianPython is the interpreter the Debian packages python3-psycopg2,
// python3-psycopg, python3-sqlalchemy and pgcli install into (the python3
// on PATH may be another one without them).
const debianPython = "/usr/bin/python3"

// pgjdbcJar is libpostgresql-jdbc-java's driver.
const pgjdbcJar = "/usr/share/java/postgresql.jar"

// pythonCase runs script with Debian's Python.
func pythonCase(name, script string, steps []string, pending map[string]string) clientCase {
	return clientCase{name: name, steps: steps, pending: pending, run: func(t *testing.T, tg clientTarget) []stepResult {
		if _, err := os.Stat(debianPython); err != nil {
			t.Fatalf("%s is missing (Debian package python3; scripts/test.sh installs the client packages): %v", debianPython, err)
		}
		return runScript(t, tg, clientDir(t), debianPython, script)
	}}
}

var psycopg2Case = pythonCase("psycopg2", "psycopg2_session.py", withSteps("copy", "named_cursor"), map[string]string{})

var psycopg3Case = pythonCase("psycopg3", "psycopg3_session.py", withSteps("binary", "pipeline", "copy", "typeinfo"), map[string]string{})

var sqlalchemyCase = pythonCase("sqlalchemy", "sqlalchemy_session.py", withSteps("reflection", "orm", "orm_savepoint"), map[string]string{})

var pgcliCase = pythonCase("pgcli", "pgcli_session.py", []string{"connect", "ddl", "refresh_schemata", "refresh_tables",
	"refresh_views", "refresh_types", "refresh_databases", "refresh_functions", "completions", "describe", "df"}, map[string]string{
	// pgcli's foreign-key query: unnest() of pg_constraint.conkey in the
	// select list, generate_subscripts, JOIN … USING.
})

// TestClientPsycopg2 runs psycopg2's session.
func TestClientPsycopg2(t *testing.T) { runClientCase(t, psycopg2Case) }

// TestClientPsycopg3 runs psycopg 3's session.
func TestClientPsycopg3(t *testing.T) { runClientCase(t, psycopg3Case) }

// TestClientSQLAlchemy runs SQLAlchemy 1.4's session over psycopg2.
func TestClientSQLAlchemy(t *testing.T) { runClientCase(t, sqlalchemyCase) }

// sqlalchemy2Case runs the SQLAlchemy session with SQLAlchemy 2 (from
// scripts/install-sqlalchemy2.sh) over driver: psycopg2 or psycopg (3).
func sqlalchemy2Case(driver string) clientCase {
	return clientCase{name: "sqlalchemy2-" + driver, steps: withSteps("reflection", "orm", "orm_savepoint"),
		pending: map[string]string{}, run: func(t *testing.T, tg clientTarget) []stepResult {
			site := sqlalchemy2(t)
			return runScript(t, tg, clientDir(t), "env", "PYTHONPATH="+site, "SQLALCHEMY_DRIVER="+driver,
				debianPython, "sqlalchemy_session.py")
		}}
}

var (
	sqlalchemy2Psycopg2Case = sqlalchemy2Case("psycopg2")
	sqlalchemy2PsycopgCase  = sqlalchemy2Case("psycopg")
)

// TestClientSQLAlchemy2 runs SQLAlchemy 2's session over psycopg2 and over
// psycopg 3.
func TestClientSQLAlchemy2(t *testing.T) {
	for _, c := range []clientCase{sqlalchemy2Psycopg2Case, sqlalchemy2PsycopgCase} {
		t.Run(c.name, func(t *testing.T) { runClientCase(t, c) })
	}
}

// sqlalchemy2 returns the directory holding SQLAlchemy 2 for PYTHONPATH,
// running scripts/install-sqlalchemy2.sh (which does nothing when it is
// there) into the cache directory.
func sqlalchemy2(t *testing.T) string {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("..", "scripts", "install-sqlalchemy2.sh"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("bash", script, filepath.Join(clientCacheDir(t), "sqlalchemy2")).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("%s: %v\n%s", script, err, stderr)
	}
	return strings.TrimSpace(string(out))
}

// TestClientPgcli runs pgcli's completion refreshers and special commands.
func TestClientPgcli(t *testing.T) { runClientCase(t, pgcliCase) }

var pgjdbcCase = clientCase{
	name:    "pgjdbc",
	steps:   withSteps("binary", "metadata", "setobject"),
	pending: map[string]string{},
	run: func(t *testing.T, tg clientTarget) []stepResult {
		javac := mustHave(t, "javac", "default-jdk-headless")
		java := mustHave(t, "java", "default-jdk-headless")
		if _, err := os.Stat(pgjdbcJar); err != nil {
			t.Fatalf("%s is missing (Debian package libpostgresql-jdbc-java; scripts/test.sh installs it): %v", pgjdbcJar, err)
		}
		classes := compileJava(t, javac, filepath.Join(clientDir(t), "PgjdbcSession.java"))
		url := "jdbc:postgresql://" + tg.host + ":" + tg.port + "/" + tg.db + "?user=" + tg.user
		return runScript(t, tg, classes, java, "-Xshare:auto", "-XX:TieredStopAtLevel=1",
			"-cp", classes+string(os.PathListSeparator)+pgjdbcJar, "PgjdbcSession", url, tg.name)
	},
}

// compileJava compiles src against pgjdbc's jar into a cache directory
// named by a hash of both (~/.cache/sluice-clients/java/…), so that javac
// runs once per change of the program or the driver rather than on every
// test run.
func compileJava(t *testing.T, javac, src string) string {
	t.Helper()
	h := sha256.New()
	for _, f := range []string{src, pgjdbcJar} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		h.Write(b)
	}
	dir := filepath.Join(clientCacheDir(t), "java", hex.EncodeToString(h.Sum(nil))[:16])
	class := filepath.Join(dir, strings.TrimSuffix(filepath.Base(src), ".java")+".class")
	if _, err := os.Stat(class); err == nil {
		return dir
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "javac-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	if out, err := exec.Command(javac, "-d", tmp, "-cp", pgjdbcJar, src).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, statErr := os.Stat(class); statErr != nil { // not another run's identical result
			t.Fatal(err)
		}
	}
	return dir
}

// clientCacheDir is where the client tests keep what they install or
// build: $SLUICE_CLIENT_CACHE, or ~/.cache/sluice-clients.
func clientCacheDir(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv("SLUICE_CLIENT_CACHE"); dir != "" {
		return dir
	}
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatalf("finding a cache directory for the client tests: %v", err)
	}
	return filepath.Join(home, ".cache", "sluice-clients")
}

// TestClientPgJDBC runs pgjdbc's session.
func TestClientPgJDBC(t *testing.T) { runClientCase(t, pgjdbcCase) }

var nodePostgresCase = clientCase{
	name:    "node-postgres",
	steps:   commonSteps,
	pending: map[string]string{},
	run: func(t *testing.T, tg clientTarget) []stepResult {
		node := mustHave(t, "node", "nodejs")
		modules := nodeModules(t)
		// env(1) adds NODE_PATH and TZ (node-postgres builds dates in the
		// local time zone) to the target's environment.
		return runScript(t, tg, clientDir(t), "env", "NODE_PATH="+modules, "TZ=UTC", node,
			filepath.Join(clientDir(t), "node_session.js"))
	},
}

// TestClientNodePostgres runs node-postgres' session.
func TestClientNodePostgres(t *testing.T) { runClientCase(t, nodePostgresCase) }

// nodeModules returns a node_modules directory holding pg@8, installing it
// with npm into the cache directory (clientCacheDir/node) when it is
// missing; scripts/test.sh installs it there too.
func nodeModules(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(clientCacheDir(t), "node")
	modules := filepath.Join(dir, "node_modules")
	if _, err := os.Stat(filepath.Join(modules, "pg", "package.json")); err == nil {
		return modules
	}
	npm := mustHave(t, "npm", "npm")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(npm, "install", "--no-audit", "--no-fund", "--prefix", dir, "pg@8")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm install pg@8 into %s: %v\n%s", dir, err, strings.TrimSpace(string(out)))
	}
	return modules
}
