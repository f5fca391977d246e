package server

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"
	"sync"

	"sluice/server/pgwire"
	"sluice/sql/parser"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/storage"
)

// This file owns roles: the role catalog (persisted under m/role/<name>,
// synchronously, apart from the epoch-committed objects), the bootstrap
// superuser, CREATE/ALTER/DROP ROLE, the Authenticator the wire protocol
// asks at login, and the databases a client may connect to.

// roleEntry is one role as persisted.
type roleEntry struct {
	Name       string `json:"name"`
	OID        int64  `json:"oid"`
	Super      bool   `json:"super,omitempty"`
	CreateRole bool   `json:"createrole,omitempty"`
	Login      bool   `json:"login,omitempty"`
	// Password is the stored verifier: SCRAM-SHA-256$... or md5...; "" for none.
	Password string `json:"password,omitempty"`
}

const (
	rolePrefix  = "m/role/"
	roleNextKey = "m/rolenext"
	mockKeyKey  = "m/authmockkey"
	// firstRoleOID is the first OID of roles other than the first
	// bootstrap superuser (which has oidOwner, 10); it keeps role OIDs
	// apart from the OIDs of relations, keys and constraints (system.go).
	firstRoleOID = 2_000_000_000
)

// databases are the names a client may connect to: pg_database lists them.
// Sluice has one database; "postgres" is the name tools assume exists.
var databases = []string{"postgres", "sluice"}

// roleCatalog holds the roles of an Engine.
type roleCatalog struct {
	db        *storage.DB
	bootstrap string // the bootstrap superuser's name
	mockKey   []byte // see MockKey

	mu struct {
		sync.RWMutex
		m       map[string]*roleEntry
		nextOID int64
	}
}

// openRoles loads the roles and makes sure the bootstrap superuser exists;
// password, when set, becomes its password (re-applied at every start, so
// that the operator's file or environment is what counts).
func openRoles(db *storage.DB, bootstrap, password string) (*roleCatalog, error) {
	if bootstrap == "" {
		bootstrap = "sluice"
	}
	rc := &roleCatalog{db: db, bootstrap: bootstrap}
	rc.mu.m = map[string]*roleEntry{}
	rc.mu.nextOID = firstRoleOID
	err := db.Scan([]byte(rolePrefix), func(_, v []byte) error {
		r := &roleEntry{}
		if err := json.Unmarshal(v, r); err != nil {
			return pgerror.Wrap(err, pgcode.DataCorrupted, "corrupt role entry")
		}
		rc.mu.m[r.Name] = r
		return nil
	})
	if err != nil {
		return nil, err
	}
	if v, err := db.Get([]byte(roleNextKey)); err != nil {
		return nil, err
	} else if v != nil {
		rc.mu.nextOID, _ = strconv.ParseInt(string(v), 10, 64)
	}
	if rc.mockKey, err = db.Get([]byte(mockKeyKey)); err != nil {
		return nil, err
	}
	if len(rc.mockKey) != 32 {
		rc.mockKey = make([]byte, 32)
		rand.Read(rc.mockKey)
		w := db.NewWriteBatch()
		w.Set([]byte(mockKeyKey), rc.mockKey)
		if err := db.WriteSync(w); err != nil {
			return nil, err
		}
	}
	b := rc.mu.m[bootstrap]
	changed := false
	if b == nil {
		oid := int64(oidOwner)
		for _, r := range rc.mu.m {
			if r.OID == oidOwner {
				oid = rc.allocOID()
			}
		}
		b = &roleEntry{Name: bootstrap, OID: oid}
		changed = true
	}
	if !b.Super || !b.Login || !b.CreateRole {
		b.Super, b.Login, b.CreateRole = true, true, true
		changed = true
	}
	if password != "" {
		b.Password = storedPassword(password, bootstrap, "scram-sha-256")
		changed = true
	}
	if changed {
		if err := rc.write(b, ""); err != nil {
			return nil, err
		}
	}
	return rc, nil
}

// allocOID returns a fresh role OID; rc.mu must be held.
func (rc *roleCatalog) allocOID() int64 {
	o := rc.mu.nextOID
	rc.mu.nextOID++
	return o
}

// write persists r (nil: none) and deletes role del ("": none) in one
// synced batch, then applies the change in memory; rc.mu must be held
// (or rc not yet shared).
func (rc *roleCatalog) write(r *roleEntry, del string) error {
	w := rc.db.NewWriteBatch()
	if del != "" {
		w.Delete([]byte(rolePrefix + del))
	}
	if r != nil {
		v, _ := json.Marshal(r)
		w.Set([]byte(rolePrefix+r.Name), v)
	}
	w.Set([]byte(roleNextKey), []byte(strconv.FormatInt(rc.mu.nextOID, 10)))
	if err := rc.db.WriteSync(w); err != nil {
		return err
	}
	if del != "" {
		delete(rc.mu.m, del)
	}
	if r != nil {
		rc.mu.m[r.Name] = r
	}
	return nil
}

// get returns a copy of role name.
func (rc *roleCatalog) get(name string) (roleEntry, bool) {
	rc.mu.RLock()
	defer rc.mu.RUnlock()
	r := rc.mu.m[name]
	if r == nil {
		return roleEntry{}, false
	}
	return *r, true
}

// list returns copies of every role, by name.
func (rc *roleCatalog) list() []roleEntry {
	rc.mu.RLock()
	out := make([]roleEntry, 0, len(rc.mu.m))
	for _, r := range rc.mu.m {
		out = append(out, *r)
	}
	rc.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// LookupRole implements pgwire.Authenticator.
func (e *Engine) LookupRole(name string) (pgwire.RoleAuth, bool) {
	r, ok := e.roles.get(name)
	if !ok {
		return pgwire.RoleAuth{}, false
	}
	return pgwire.RoleAuth{Verifier: r.Password, CanLogin: r.Login, Superuser: r.Super}, true
}

// TrustMode implements pgwire.Authenticator: no role has a password.
func (e *Engine) TrustMode() bool {
	e.roles.mu.RLock()
	defer e.roles.mu.RUnlock()
	for _, r := range e.roles.mu.m {
		if r.Password != "" {
			return false
		}
	}
	return true
}

// MockKey keys pgwire's fake SCRAM salts of unknown users; it is kept in
// the store so that it is the same at every start.
func (e *Engine) MockKey() []byte { return e.roles.mockKey }

// Superuser returns the bootstrap superuser's name.
func (e *Engine) Superuser() string { return e.roles.bootstrap }

// connect checks the database and role of a new connection and opens its
// session.
func (e *Engine) connect(p pgwire.StartupInfo) (pgwire.Session, error) {
	known := false
	for _, d := range databases {
		known = known || d == p.Database
	}
	if !known {
		return nil, pgerror.New(pgcode.InvalidCatalogName, "database %q does not exist", p.Database)
	}
	r, ok := e.roles.get(p.User)
	if !ok {
		return nil, pgerror.New(pgcode.InvalidAuthorizationSpecification, "role %q does not exist", p.User)
	}
	s := newSession(e, p)
	s.settings["is_superuser"] = onOffSetting(r.Super)
	ac := e.cfg.Auth
	s.settings["max_connections"] = strconv.Itoa(cmp.Or(ac.MaxConnections, 100))
	s.settings["superuser_reserved_connections"] = strconv.Itoa(cmp.Or(ac.ReservedConnections, 3))
	s.settings["authentication_timeout"] = cmp.Or(ac.AuthTimeout, "1min")
	s.settings["ssl"] = onOffSetting(ac.TLS)
	s.changed = map[string]string{"is_superuser": onOffSetting(r.Super)}
	if err := s.startupTimeZone(p.Params); err != nil { // timezone.go
		return nil, err
	}
	if err := s.initLimits(); err != nil { // limits.go: timeouts and statement_mem from the startup packet
		return nil, err
	}
	s.initial = maps.Clone(s.settings)
	return s, nil
}

func onOffSetting(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// serverSettings are settings fixed at server start (context postmaster
// or internal in PostgreSQL): SET refuses them.
var serverSettings = map[string]bool{
	"max_connections": true, "superuser_reserved_connections": true, "authentication_timeout": true,
	"is_superuser": true, "server_version": true, "server_version_num": true, "server_encoding": true,
	"lc_collate": true, "lc_ctype": true, "max_identifier_length": true, "max_index_keys": true, "integer_datetimes": true, "ssl": true,
}

// checkSet validates SET name = val for the settings this file owns.
func checkSet(name, val string) error {
	if serverSettings[name] {
		return pgerror.New(pgcode.CantChangeRuntimeParam, "parameter %q cannot be changed", name)
	}
	if name == "background_ddl" {
		switch strings.ToLower(strings.Trim(val, "'\" ")) {
		case "", "default", "on", "off", "true", "false", "1", "0", "yes", "no":
		default:
			return pgerror.New(pgcode.InvalidParameterValue, "parameter %q requires a Boolean value", name)
		}
	}
	if name == "password_encryption" {
		v := strings.ToLower(strings.Trim(val, "'\""))
		if v != "" && v != "default" && v != "md5" && v != "scram-sha-256" {
			return pgerror.New(pgcode.InvalidParameterValue, "invalid value for parameter %q: %q", name, val).
				WithHint("Available values: md5, scram-sha-256.")
		}
	}
	return nil
}

// storedPassword returns what is stored for a password given in CREATE or
// ALTER ROLE: as is when already a verifier (as PostgreSQL), else its
// SCRAM-SHA-256 verifier or, with password_encryption md5, its md5 hash.
func storedPassword(pw, user, encryption string) string {
	if pgwire.IsPasswordVerifier(pw) {
		return pw
	}
	if strings.EqualFold(strings.Trim(encryption, "'\""), "md5") {
		return pgwire.MD5Verifier(pw, user)
	}
	return pgwire.SCRAMVerifier(pw)
}

// roleName resolves CURRENT_USER, SESSION_USER and CURRENT_ROLE.
func (s *session) roleName(n string) string {
	switch n {
	case "current_user", "session_user", "current_role":
		return s.info.User
	}
	return n
}

// roleStmt runs CREATE, ALTER or DROP ROLE.
func (s *session) roleStmt(ctx context.Context, x *parser.RoleStmt, w pgwire.ResultWriter) error {
	if s.tx != nil {
		return pgerror.New(pgcode.ActiveSQLTransaction, "%s ROLE cannot run inside a transaction block", x.Action)
	}
	rc := s.e.roles
	me, ok := rc.get(s.info.User)
	if !ok {
		return pgerror.New(pgcode.UndefinedObject, "role %q does not exist", s.info.User)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	opts := map[string]parser.RoleOption{}
	for _, o := range x.Options {
		opts[o.Name] = o
		if o.Password != nil && *o.Password == "" {
			if err := w.Notice("empty string is not a valid password, clearing password"); err != nil {
				return err
			}
		}
	}
	kind := "ROLE"
	if x.User {
		kind = "USER"
	}
	tag := x.Action + " " + kind
	switch x.Action {
	case "CREATE":
		name := x.Names[0]
		if err := checkRoleName(name); err != nil {
			return err
		}
		if !me.Super && (!me.CreateRole || opts["superuser"].Value) {
			if !me.CreateRole {
				return pgerror.New(pgcode.InsufficientPrivilege, "permission denied to create role").
					WithDetail("Only roles with the CREATEROLE attribute may create roles.")
			}
			return pgerror.New(pgcode.InsufficientPrivilege, "permission denied to create role").
				WithDetail("Only roles with the SUPERUSER attribute may create roles with the SUPERUSER attribute.")
		}
		if rc.mu.m[name] != nil {
			return pgerror.New(pgcode.DuplicateObject, "role %q already exists", name)
		}
		r := &roleEntry{Name: name, Login: x.User}
		s.applyRoleOptions(r, opts)
		if err := s.checkLockout(r); err != nil {
			return err
		}
		r.OID = rc.allocOID()
		if err := rc.write(r, ""); err != nil {
			return err
		}
		return w.Complete(tag)
	case "ALTER":
		name := s.roleName(x.Names[0])
		cur := rc.mu.m[name]
		if cur == nil {
			return pgerror.New(pgcode.UndefinedObject, "role %q does not exist", name)
		}
		r := *cur
		if x.RenameTo != "" {
			if err := s.mayManage(me, cur, "rename"); err != nil {
				return err
			}
			if name == s.info.User {
				return pgerror.New(pgcode.FeatureNotSupported, "session user cannot be renamed")
			}
			if name == rc.bootstrap {
				return pgerror.New(pgcode.InsufficientPrivilege, "permission denied to rename role %q", name).
					WithDetail("It is the bootstrap superuser (--superuser).")
			}
			if err := checkRoleName(x.RenameTo); err != nil {
				return err
			}
			if rc.mu.m[x.RenameTo] != nil {
				return pgerror.New(pgcode.DuplicateObject, "role %q already exists", x.RenameTo)
			}
			if err := s.e.checkRoleUnused(name, "rename"); err != nil {
				return err
			}
			r.Name = x.RenameTo
			notice := strings.HasPrefix(r.Password, "md5")
			if notice {
				r.Password = "" // the md5 hash is salted with the name (as PG)
			}
			if err := rc.write(&r, name); err != nil {
				return err
			}
			if notice {
				if err := w.Notice("MD5 password cleared because of role rename"); err != nil {
					return err
				}
			}
			return w.Complete(tag)
		}
		onlyPassword := len(opts) == 1 && opts["password"].Name != ""
		if !(name == s.info.User && onlyPassword) {
			if err := s.mayManage(me, cur, "alter"); err != nil {
				return err
			}
			if _, set := opts["superuser"]; set && !me.Super {
				return pgerror.New(pgcode.InsufficientPrivilege, "permission denied to alter role").
					WithDetail("Only roles with the SUPERUSER attribute may change the SUPERUSER attribute.")
			}
		}
		s.applyRoleOptions(&r, opts)
		if name == rc.bootstrap && !r.Super {
			return pgerror.New(pgcode.InsufficientPrivilege, "permission denied to alter role").
				WithDetail("The bootstrap superuser must have the SUPERUSER attribute.")
		}
		if err := s.checkLockout(&r); err != nil {
			return err
		}
		if err := rc.write(&r, ""); err != nil {
			return err
		}
		return w.Complete(tag)
	}
	// DROP: check every role first, then drop them (a synced write each).
	var drop []string
	for _, n := range x.Names {
		n = s.roleName(n)
		cur := rc.mu.m[n]
		if cur == nil {
			if x.IfExists {
				if err := w.Notice(fmt.Sprintf("role %q does not exist, skipping", n)); err != nil {
					return err
				}
				continue
			}
			return pgerror.New(pgcode.UndefinedObject, "role %q does not exist", n)
		}
		if err := s.mayManage(me, cur, "drop"); err != nil {
			return err
		}
		switch {
		case n == s.info.User:
			return pgerror.New(pgcode.ObjectInUse, "current user cannot be dropped")
		case n == rc.bootstrap:
			return pgerror.New(pgcode.DependentObjectsStillExist, "cannot drop role %s because it is required by the database system", n)
		}
		if err := s.e.checkRoleUnused(n, "drop"); err != nil {
			return err
		}
		drop = append(drop, n)
	}
	for _, n := range drop {
		if err := rc.write(nil, n); err != nil {
			return err
		}
	}
	return w.Complete(tag)
}

// mayManage checks that role me may change role r (verb: alter, drop,
// rename): a superuser may; a CREATEROLE role may for non-superusers.
func (s *session) mayManage(me roleEntry, r *roleEntry, verb string) error {
	if me.Super {
		return nil
	}
	if !me.CreateRole {
		return pgerror.New(pgcode.InsufficientPrivilege, "permission denied to %s role", verb).
			WithDetail("Only roles with the CREATEROLE attribute may %s roles.", verb)
	}
	if r.Super {
		return pgerror.New(pgcode.InsufficientPrivilege, "permission denied to %s role", verb).
			WithDetail("Only roles with the SUPERUSER attribute may %s roles with the SUPERUSER attribute.", verb)
	}
	return nil
}

// applyRoleOptions sets the attributes opts name on r.
func (s *session) applyRoleOptions(r *roleEntry, opts map[string]parser.RoleOption) {
	for _, o := range opts {
		switch o.Name {
		case "login":
			r.Login = o.Value
		case "superuser":
			r.Super = o.Value
		case "createrole":
			r.CreateRole = o.Value
		case "password":
			r.Password = ""
			if o.Password != nil && *o.Password != "" {
				r.Password = storedPassword(*o.Password, r.Name, s.settings["password_encryption"])
			}
		}
	}
}

// checkLockout refuses a password change that would lock the bootstrap
// superuser out: the first password configured ends trust mode (every
// connection must then authenticate), so no other role may get one while
// the superuser has none, and the superuser's cannot be cleared while
// another role has one. rc.mu must be held.
func (s *session) checkLockout(r *roleEntry) error {
	rc := s.e.roles
	b := rc.mu.m[rc.bootstrap]
	if b == nil {
		return nil
	}
	if r.Name == rc.bootstrap {
		if r.Password != "" {
			return nil
		}
		for _, o := range rc.mu.m {
			if o.Name != rc.bootstrap && o.Password != "" {
				return pgerror.New(pgcode.ObjectNotInPrerequisiteState, "cannot clear the password of superuser %q while role %q has one", b.Name, o.Name).
					WithDetail("With a password configured every connection must authenticate: %q could no longer log in.", b.Name).
					WithHint("Clear the other roles' passwords first (ALTER ROLE … PASSWORD NULL).")
			}
		}
		return nil
	}
	if r.Password == "" || b.Password != "" {
		return nil
	}
	return pgerror.New(pgcode.ObjectNotInPrerequisiteState, "cannot set a password for role %q while superuser %q has none", r.Name, b.Name).
		WithDetail("The first password ends trust mode: every connection, local ones included, must then authenticate, and %q could no longer log in.", b.Name).
		WithHint("Give the superuser a password first: ALTER ROLE %s PASSWORD '…', or start Sluice with --superuser-password-file.", b.Name)
}

// checkRoleName refuses the names PostgreSQL reserves.
func checkRoleName(n string) error {
	switch {
	case n == "public" || n == "none":
		return pgerror.New(pgcode.ReservedName, "role name %q is reserved", n)
	case strings.HasPrefix(n, "pg_"):
		return pgerror.New(pgcode.ReservedName, "role name %q is reserved", n).
			WithDetail("Role names starting with \"pg_\" are reserved.")
	case n == "":
		return pgerror.New(pgcode.InvalidParameterValue, "role name cannot be empty")
	}
	return nil
}

// AuthConfig configures roles; the connection limits themselves are
// enforced by pgwire, they are here for SHOW.
type AuthConfig struct {
	// Superuser is the bootstrap superuser's name (default "sluice");
	// SuperuserPassword, when set, becomes its password.
	Superuser, SuperuserPassword string
	MaxConnections               int
	ReservedConnections          int
	AuthTimeout                  string // as SHOW authentication_timeout prints it, e.g. "1min"
	TLS                          bool   // SHOW ssl
}

// oidOtherDatabase is the OID pg_database gives the database a session is
// not connected to (the connected one has oidDatabase).
const oidOtherDatabase = 4

// checkSysRead refuses system relations a role may not read: pg_authid
// holds the password verifiers and is for superusers only (as PostgreSQL).
func checkSysRead(name string, env *sysEnv) error {
	if name == "pg_authid" && !env.super {
		return pgerror.New(pgcode.InsufficientPrivilege, "permission denied for table pg_authid")
	}
	return nil
}
