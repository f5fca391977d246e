package parser

import (
	"reflect"
	"testing"

	"sluice/sql/pgerror"
)

func TestGrantParse(t *testing.T) {
	for _, c := range []struct {
		sql  string
		want Grant
	}{
		{`GRANT SELECT, insert ON t, s.u TO alice, PUBLIC`, Grant{Privileges: []string{"select", "insert"}, On: "table", Objects: []string{"t", "s.u"}, Grantees: []string{"alice", "public"}}},
		{`GRANT ALL PRIVILEGES ON TABLE "T" TO "Bob" WITH GRANT OPTION`, Grant{On: "table", Objects: []string{"T"}, Grantees: []string{"Bob"}, GrantOption: true}},
		{`GRANT ALL ON ALL TABLES IN SCHEMA s TO GROUP g`, Grant{On: "all tables", Objects: []string{"s"}, Grantees: []string{"g"}}},
		{`GRANT USAGE, CREATE ON SCHEMA s TO current_user`, Grant{Privileges: []string{"usage", "create"}, On: "schema", Objects: []string{"s"}, Grantees: []string{"current_user"}}},
		{`GRANT SELECT ON t TO "public"`, Grant{Privileges: []string{"select"}, On: "table", Objects: []string{"t"}, Grantees: []string{`"public"`}}},
		{`REVOKE GRANT OPTION FOR SELECT ON t FROM bob CASCADE`, Grant{Revoke: true, GrantOption: true, Privileges: []string{"select"}, On: "table", Objects: []string{"t"}, Grantees: []string{"bob"}, Cascade: true}},
		{`REVOKE ALL ON t FROM bob RESTRICT`, Grant{Revoke: true, On: "table", Objects: []string{"t"}, Grantees: []string{"bob"}}},
	} {
		st, err := ParseOne(c.sql)
		if err != nil {
			t.Fatalf("%s: %v", c.sql, err)
		}
		g := st.(*Grant)
		c.want.stmtText = g.stmtText
		if !reflect.DeepEqual(*g, c.want) {
			t.Errorf("%s:\ngot  %+v\nwant %+v", c.sql, *g, c.want)
		}
	}
	for sql, code := range map[string]string{
		`GRANT SELECT (a) ON t TO bob`:                     "0A000",
		`GRANT ALL (a) ON t TO bob`:                        "0A000",
		`GRANT EXECUTE ON FUNCTION f(int) TO bob`:          "0A000",
		`GRANT CONNECT ON DATABASE d TO bob`:               "0A000",
		`GRANT SELECT ON ALL SEQUENCES IN SCHEMA s TO bob`: "0A000",
		`GRANT SELECT ON t TO bob GRANTED BY alice`:        "0A000",
		`GRANT alice TO bob`:                               "0A000",
		`REVOKE admins FROM bob`:                           "0A000",
		`GRANT SELECT ON t`:                                "42601",
		`GRANT SELECT ON t TO bob WITH ADMIN OPTION`:       "42601",
		`REVOKE SELECT ON t TO bob`:                        "42601",
	} {
		_, err := ParseOne(sql)
		if got := string(pgerror.GetCode(err)); got != code {
			t.Errorf("%s: want %s, got %v", sql, code, err)
		}
	}
}

func TestAlterOwnerParse(t *testing.T) {
	st, err := ParseOne(`ALTER TABLE s.t OWNER TO "Bob"`)
	if err != nil {
		t.Fatal(err)
	}
	if a := st.(*AlterTable); a.Action != "owner to" || a.Name != "s.t" || a.NewName != "Bob" {
		t.Fatalf("%+v", a)
	}
}
