package connector

import (
	"strings"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// An option written `password = SECRET name` (RisingWave's syntax) reaches
// the server as a secret reference: the option's value in the catalog is
// SecretRef(name), never the secret, and ResolveOptions swaps in the
// value just before the options reach a connector's Validate or Open.

// secretRefPrefix starts a secret reference; no SQL string holds a NUL, so
// no literal value can be mistaken for one.
const secretRefPrefix = "\x00secret:"

// SecretRef is the option value that stands for secret name.
func SecretRef(name string) string { return secretRefPrefix + name }

// SecretRefName returns the secret an option value refers to, if it is a
// reference.
func SecretRefName(v string) (string, bool) { return strings.CutPrefix(v, secretRefPrefix) }

// ResolveOptions returns opts with every secret reference replaced by the
// secret's value (opts itself when it holds none).
func (p *Policy) ResolveOptions(opts map[string]string) (map[string]string, error) {
	var out map[string]string
	for k, v := range opts {
		name, ok := SecretRefName(v)
		if !ok {
			continue
		}
		if p == nil || p.Secret == nil {
			return nil, pgerror.New(pgcode.UndefinedObject, "secret %q does not exist", name)
		}
		val, err := p.Secret(name)
		if err != nil {
			return nil, err
		}
		if out == nil {
			out = make(map[string]string, len(opts))
			for k2, v2 := range opts {
				out[k2] = v2
			}
		}
		out[k] = val
	}
	if out == nil {
		return opts, nil
	}
	return out, nil
}
