package parser

import (
	"testing"

	"sluice/sql/pgerror"
)

func TestParseRoleStatements(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		want string // "" ok, else SQLSTATE
	}{
		{`CREATE ROLE alice`, ""},
		{`CREATE USER bob WITH PASSWORD 'x' SUPERUSER`, ""},
		{`CREATE ROLE "Mixed" LOGIN NOSUPERUSER CREATEROLE ENCRYPTED PASSWORD 'p'`, ""},
		{`ALTER ROLE alice WITH PASSWORD NULL`, ""},
		{`ALTER USER alice RENAME TO carol`, ""},
		{`DROP ROLE IF EXISTS a, b`, ""},
		{`DROP USER a`, ""},
		{`CREATE ROLE a LOGIN NOLOGIN`, "42601"},
		{`CREATE ROLE a CREATEDB`, "0A000"},
		{`CREATE ROLE a UNENCRYPTED PASSWORD 'x'`, "0A000"},
		{`ALTER ROLE a`, "42601"},
		{`ALTER ROLE a SET search_path = x`, "0A000"},
		{`CREATE ROLE a PASSWORD`, "42601"},
		{`CREATE ROLE`, "42601"},
	} {
		st, err := ParseOne(tc.sql)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.sql, err)
			} else if _, ok := st.(*RoleStmt); !ok {
				t.Errorf("%s: got %T", tc.sql, st)
			}
			continue
		}
		if code := pgerror.GetCode(err); string(code) != tc.want {
			t.Errorf("%s: got %v (%s), want %s", tc.sql, err, code, tc.want)
		}
	}
	st, _ := ParseOne(`CREATE ROLE "Mixed" LOGIN PASSWORD 'p''q'`)
	rs := st.(*RoleStmt)
	if rs.Names[0] != "Mixed" || len(rs.Options) != 2 || *rs.Options[1].Password != "p'q" || rs.Text() == "" {
		t.Errorf("got %+v", rs)
	}
}

// Role statements seed FuzzParse too.
func init() {
	fuzzSeeds = append(fuzzSeeds,
		`CREATE ROLE a WITH LOGIN SUPERUSER CREATEROLE PASSWORD 'x'`,
		`ALTER USER "B" NOLOGIN NOSUPERUSER NOCREATEROLE ENCRYPTED PASSWORD NULL`,
		`ALTER ROLE a RENAME TO b`, `DROP ROLE IF EXISTS a, "b"`, `CREATE USER u CONNECTION LIMIT 3`)
}
