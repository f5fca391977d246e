package acl

import (
	"reflect"
	"testing"
)

func TestItemText(t *testing.T) {
	for _, s := range []string{"alice=arwdDxt/alice", "=r/alice", "bob=r*w/alice", `"we ird"=U*C/"a""b"`, "x=/y"} {
		it, err := ParseItem(s)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if got := it.String(); got != s {
			t.Errorf("%s: round trip gives %s", s, got)
		}
	}
	for _, s := range []string{"alice", "alice=q/bob", "alice=r", "=r/"} {
		if _, err := ParseItem(s); err == nil {
			t.Errorf("%s: want an error", s)
		}
	}
	if got := (ACL{{Grantee: "a", Grantor: "a", Privs: Select}, {Grantor: "a", Privs: Select}}).Text(); got != "{a=r/a,=r/a}" {
		t.Errorf("Text: %s", got)
	}
}

func TestGrantRevoke(t *testing.T) {
	a := Default("alice", AllTable)
	a = a.Grant("alice", "bob", Select|Insert, true)
	a = a.Grant("bob", "carol", Select, false)
	a = a.Grant("alice", "", Select, false)
	if got := a.Strings(); !reflect.DeepEqual(got, []string{"alice=arwdDxt/alice", "bob=a*r*/alice", "carol=r/bob", "=r/alice"}) {
		t.Fatalf("after grants: %v", got)
	}
	if p, g := a.Rights("carol"); p != Select || g != 0 {
		t.Errorf("carol: %v %v", p, g)
	}
	if p, _ := a.Rights("dave"); p != Select {
		t.Errorf("dave holds PUBLIC's SELECT: %v", p)
	}
	// bob's grant to carol depends on bob's grant option: RESTRICT refuses.
	if _, blocked := a.Revoke("alice", "bob", Select, false, false, "alice"); blocked != "carol" {
		t.Fatalf("restrict: blocked = %q", blocked)
	}
	b, blocked := a.Revoke("alice", "bob", Select, true, true, "alice")
	if blocked != "" {
		t.Fatal(blocked)
	}
	if got := b.Strings(); !reflect.DeepEqual(got, []string{"alice=arwdDxt/alice", "bob=a*r/alice", "=r/alice"}) {
		t.Fatalf("after REVOKE GRANT OPTION FOR ... CASCADE: %v", got)
	}
	c, _ := b.Revoke("alice", "bob", Select|Insert, false, false, "alice")
	c, _ = c.Revoke("alice", "", Select, false, false, "alice")
	if got := c.Strings(); !reflect.DeepEqual(got, []string{"alice=arwdDxt/alice"}) {
		t.Fatalf("after revoking all: %v", got)
	}
}

func TestNewOwner(t *testing.T) {
	a := Default("alice", AllTable).Grant("alice", "bob", Select, false).Grant("alice", "carol", Select, true)
	got := a.NewOwner("alice", "bob").Strings()
	if want := []string{"bob=arwdDxt/bob", "carol=r*/bob"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
