package acl

import (
	"fmt"
	"sort"
	"strings"
)

// Privilege is a set of privileges (bits as in PostgreSQL's ACL_* masks).
type Privilege uint16

// The privileges, in PostgreSQL's aclitem letter order.
const (
	Insert     Privilege = 1 << iota // a
	Select                           // r
	Update                           // w
	Delete                           // d
	Truncate                         // D
	References                       // x
	Trigger                          // t
	Execute                          // X
	Usage                            // U
	Create                           // C
	Temporary                        // T
	Connect                          // c
)

// letters are the aclitem letters of the bits above, in order.
const letters = "arwdDxtXUCTc"

// Kind-wide sets: everything GRANT ALL gives on a relation or a schema.
const (
	AllTable  = Insert | Select | Update | Delete | Truncate | References | Trigger
	AllSchema = Usage | Create
)

var names = map[string]Privilege{
	"insert": Insert, "select": Select, "update": Update, "delete": Delete,
	"truncate": Truncate, "references": References, "trigger": Trigger,
	"execute": Execute, "usage": Usage, "create": Create,
	"temporary": Temporary, "temp": Temporary, "connect": Connect,
}

// Parse returns the privilege named name (case-insensitive), ok false when
// there is none by that name.
func Parse(name string) (Privilege, bool) {
	p, ok := names[strings.ToLower(name)]
	return p, ok
}

// Name is the upper-case SQL name of a single privilege (SELECT, ...).
func (p Privilege) Name() string {
	for n, b := range names {
		if b == p && n != "temp" {
			return strings.ToUpper(n)
		}
	}
	return fmt.Sprintf("PRIVILEGE(%d)", uint16(p))
}

// Each calls f for every privilege of p, in letter order.
func (p Privilege) Each(f func(Privilege)) {
	for i := range letters {
		if b := Privilege(1) << i; p&b != 0 {
			f(b)
		}
	}
}

// Item is one aclitem: Grantee ("" = PUBLIC) holds Privs, granted by
// Grantor; GrantOpts is the subset it may grant on.
type Item struct {
	Grantee, Grantor string
	Privs, GrantOpts Privilege
}

// String is the aclitem text PostgreSQL prints.
func (it Item) String() string {
	var b strings.Builder
	b.WriteString(quoteRole(it.Grantee))
	b.WriteByte('=')
	for i := range letters {
		bit := Privilege(1) << i
		if it.Privs&bit != 0 {
			b.WriteByte(letters[i])
			if it.GrantOpts&bit != 0 {
				b.WriteByte('*')
			}
		}
	}
	b.WriteByte('/')
	b.WriteString(quoteRole(it.Grantor))
	return b.String()
}

// quoteRole quotes a role name in aclitem text as PostgreSQL's putid does:
// when it holds anything but alphanumerics and underscores.
func quoteRole(s string) string {
	for _, r := range s {
		if !(r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= 0x80) {
			return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
		}
	}
	return s
}

// ParseItem reads aclitem text as String writes it.
func ParseItem(s string) (Item, error) {
	var it Item
	grantee, rest, err := readRole(s)
	if err != nil || !strings.HasPrefix(rest, "=") {
		return it, fmt.Errorf("invalid aclitem %q", s)
	}
	it.Grantee = grantee
	rest = rest[1:]
	for rest != "" && rest[0] != '/' {
		i := strings.IndexByte(letters, rest[0])
		if i < 0 {
			return it, fmt.Errorf("invalid mode character in aclitem %q", s)
		}
		it.Privs |= 1 << i
		rest = rest[1:]
		if strings.HasPrefix(rest, "*") {
			it.GrantOpts |= 1 << i
			rest = rest[1:]
		}
	}
	if !strings.HasPrefix(rest, "/") {
		return it, fmt.Errorf("invalid aclitem %q: no grantor", s)
	}
	grantor, rest, err := readRole(rest[1:])
	if err != nil || rest != "" || grantor == "" {
		return it, fmt.Errorf("invalid aclitem %q", s)
	}
	it.Grantor = grantor
	return it, nil
}

func readRole(s string) (string, string, error) {
	if strings.HasPrefix(s, `"`) {
		var b strings.Builder
		for i := 1; i < len(s); i++ {
			if s[i] == '"' {
				if i+1 < len(s) && s[i+1] == '"' {
					b.WriteByte('"')
					i++
					continue
				}
				return b.String(), s[i+1:], nil
			}
			b.WriteByte(s[i])
		}
		return "", "", fmt.Errorf("unterminated quoted role")
	}
	i := strings.IndexAny(s, "=/")
	if i < 0 {
		return s, "", nil
	}
	return s[:i], s[i:], nil
}

// ACL is an access-control list. A nil ACL means the object's default
// (Default): its owner holds every privilege of its kind.
type ACL []Item

// Default is the ACL an object of owner with privileges all starts with,
// as PostgreSQL's acldefault: the owner holds them all (its grant
// options come from owning the object, not from the item).
func Default(owner string, all Privilege) ACL {
	return ACL{{Grantee: owner, Grantor: owner, Privs: all}}
}

// Strings is the ACL as aclitem texts.
func (a ACL) Strings() []string {
	out := make([]string, len(a))
	for i, it := range a {
		out[i] = it.String()
	}
	return out
}

// Text is the ACL as PostgreSQL prints an aclitem[]: {a=r/b,...}.
func (a ACL) Text() string {
	var b strings.Builder
	b.WriteByte('{')
	for i, it := range a {
		if i > 0 {
			b.WriteByte(',')
		}
		s := it.String()
		if strings.ContainsAny(s, `",{} \`) {
			s = `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
		}
		b.WriteString(s)
	}
	b.WriteByte('}')
	return b.String()
}

// FromStrings parses aclitem texts (as Strings writes them).
func FromStrings(ss []string) (ACL, error) {
	out := make(ACL, 0, len(ss))
	for _, s := range ss {
		it, err := ParseItem(s)
		if err != nil {
			return nil, err
		}
		out = append(out, it)
	}
	return out, nil
}

// Rights returns what role holds: its own items and PUBLIC's, and the
// subset it may grant on.
func (a ACL) Rights(role string) (privs, grantable Privilege) {
	for _, it := range a {
		if it.Grantee == role || it.Grantee == "" {
			privs |= it.Privs
			if it.Grantee == role {
				grantable |= it.GrantOpts
			}
		}
	}
	return privs, grantable
}

// Grant returns a with privs (and, when withOption, their grant option)
// given by grantor to grantee ("" = PUBLIC). PUBLIC cannot hold a grant
// option; the caller refuses that first.
func (a ACL) Grant(grantor, grantee string, privs Privilege, withOption bool) ACL {
	out := append(ACL(nil), a...)
	for i := range out {
		if out[i].Grantee == grantee && out[i].Grantor == grantor {
			out[i].Privs |= privs
			if withOption {
				out[i].GrantOpts |= privs
			}
			return out
		}
	}
	it := Item{Grantee: grantee, Grantor: grantor, Privs: privs}
	if withOption {
		it.GrantOpts = privs
	}
	return append(out, it)
}

// Revoke returns a with privs (or, when optionOnly, only their grant
// option) that grantor gave to grantee taken away. When cascade, what
// grantee granted onwards and can no longer justify goes too (PostgreSQL's
// REVOKE ... CASCADE); owner is never stripped. It reports whether a
// dependent grant stood in the way (without cascade), naming the grantee
// of the first such grant.
func (a ACL) Revoke(grantor, grantee string, privs Privilege, optionOnly, cascade bool, owner string) (ACL, string) {
	out := append(ACL(nil), a...)
	var lost Privilege // grant options grantee loses
	for i := range out {
		it := &out[i]
		if it.Grantee != grantee || it.Grantor != grantor {
			continue
		}
		lost |= it.GrantOpts & privs
		it.GrantOpts &^= privs
		if !optionOnly {
			it.Privs &^= privs
		}
	}
	if grantee != "" && grantee != owner && lost != 0 {
		// Grant options grantee still holds from other grantors.
		_, still := out.Rights(grantee)
		lost &^= still
		var deps []Item
		for _, it := range out {
			if it.Grantor == grantee && it.Privs&lost != 0 {
				deps = append(deps, it)
			}
		}
		for _, d := range deps {
			if !cascade {
				return a, d.Grantee
			}
			var blocked string
			out, blocked = out.Revoke(grantee, d.Grantee, d.Privs&lost, false, true, owner)
			if blocked != "" {
				return a, blocked
			}
		}
	}
	clean := out[:0]
	for _, it := range out {
		if it.Privs != 0 {
			clean = append(clean, it)
		}
	}
	return clean, ""
}

// Grantees lists the roles named in a (PUBLIC as ""), sorted.
func (a ACL) Grantees() []string {
	seen := map[string]bool{}
	var out []string
	for _, it := range a {
		if !seen[it.Grantee] {
			seen[it.Grantee] = true
			out = append(out, it.Grantee)
		}
	}
	sort.Strings(out)
	return out
}

// NewOwner returns a with the owner changed from old to new, as
// PostgreSQL's aclnewowner: old is replaced by new as grantee and
// grantor, and items that then coincide are merged.
func (a ACL) NewOwner(old, new string) ACL {
	var out ACL
	for _, it := range a {
		if it.Grantee == old {
			it.Grantee = new
		}
		if it.Grantor == old {
			it.Grantor = new
		}
		merged := false
		for i := range out {
			if out[i].Grantee == it.Grantee && out[i].Grantor == it.Grantor {
				out[i].Privs |= it.Privs
				out[i].GrantOpts |= it.GrantOpts
				merged = true
				break
			}
		}
		if !merged {
			out = append(out, it)
		}
	}
	return out
}
