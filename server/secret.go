package server

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"sluice/exec/connector"
	"sluice/server/pgwire"
	"sluice/sql/parser"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
	"sluice/storage"
)

// Secrets (CREATE SECRET name AS 'value', Materialize's and RisingWave's
// syntax) are catalog entries of kind secret named "secret:<name>" (their
// own namespace) whose value is sealed with AES-256-GCM under a key kept
// outside the catalog: <data-dir>/secret.key (0600, made at the first
// CREATE SECRET) or --secret-key-file. The catalog holds the sealed value
// only, and the entry's SQL is the statement with its value masked.
// Connector options refer to a secret as `password = SECRET name`; the
// reference is what the catalog, SHOW CREATE and the system relations
// hold, and exec/connector.Policy.ResolveOptions swaps in the value just
// before the options reach a connector.

const kindSecret = "secret"

func secretKey(name string) string { return "secret:" + name }

// secretKeyring loads (and at first use makes) the key.
type secretKeyring struct {
	mu   sync.Mutex
	aead cipher.AEAD
}

var keyrings sync.Map // key file path -> *secretKeyring

func (e *Engine) secretKeyFile() string {
	if e.cfg.SecretKeyFile != "" {
		return e.cfg.SecretKeyFile
	}
	return filepath.Join(e.cfg.DataDir, "secret.key")
}

// secretAEAD returns the cipher of the secret key; create makes the key
// file when it does not exist.
func (e *Engine) secretAEAD(create bool) (cipher.AEAD, error) {
	path := e.secretKeyFile()
	v, _ := keyrings.LoadOrStore(path, &secretKeyring{})
	kr := v.(*secretKeyring)
	kr.mu.Lock()
	defer kr.mu.Unlock()
	if kr.aead != nil {
		return kr.aead, nil
	}
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && create {
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
		raw = []byte(hex.EncodeToString(key) + "\n")
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return nil, pgerror.Wrap(err, pgcode.IOError, "creating the secret key %s", path)
		}
		_, werr := f.Write(raw)
		if werr == nil {
			werr = f.Sync()
		}
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			os.Remove(path)
			return nil, pgerror.Wrap(werr, pgcode.IOError, "writing the secret key %s", path)
		}
	} else if err != nil {
		return nil, pgerror.Wrap(err, pgcode.IOError, "reading the secret key %s", path).
			WithHint("Secrets are sealed with the key in <data-dir>/secret.key or --secret-key-file.")
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(raw)))
	if err != nil || len(key) != 32 {
		return nil, pgerror.New(pgcode.ConfigFileError, "secret key %s is not 64 hexadecimal digits (an AES-256 key)", path)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	kr.aead = aead
	return aead, nil
}

// sealSecret encrypts value, bound to the secret's name.
func (e *Engine) sealSecret(name, value string) (string, error) {
	aead, err := e.secretAEAD(true)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(aead.Seal(nonce, nonce, []byte(value), []byte(name))), nil
}

// secretValue returns the value of secret name (exec/connector.Policy's
// Secret).
func (e *Engine) secretValue(name string) (string, error) {
	ent := e.cat.get(secretKey(name))
	if ent == nil || ent.Kind != kindSecret {
		return "", pgerror.New(pgcode.UndefinedObject, "secret %q does not exist", name)
	}
	aead, err := e.secretAEAD(false)
	if err != nil {
		return "", err
	}
	sealed, err := base64.StdEncoding.DecodeString(ent.Options["sealed"])
	if err != nil || len(sealed) < aead.NonceSize() {
		return "", pgerror.New(pgcode.DataCorrupted, "secret %q: sealed value is damaged", name)
	}
	n := aead.NonceSize()
	plain, err := aead.Open(nil, sealed[:n], sealed[n:], []byte(name))
	if err != nil {
		return "", pgerror.New(pgcode.DataCorrupted, "secret %q cannot be opened with the secret key %s", name, e.secretKeyFile()).
			WithHint("The key file is not the one the secret was sealed with.")
	}
	return string(plain), nil
}

// checkSecretWith accepts RisingWave's WITH (backend = 'meta').
func checkSecretWith(with parser.Options) error {
	for _, o := range with {
		if o.Key != "backend" || !strings.EqualFold(o.Value, "meta") {
			return pgerror.New(pgcode.InvalidParameterValue, "secret option %s = %q is not supported", o.Key, o.Value).
				WithHint("Sluice keeps secrets in its catalog, sealed with its secret key: backend = 'meta'.")
		}
	}
	return nil
}

func (e *Engine) createSecret(ctx context.Context, x *parser.CreateSecret, w pgwire.ResultWriter) error {
	if err := checkSecretWith(x.With); err != nil {
		return err
	}
	sealed, err := e.sealSecret(x.Name, x.Value)
	if err != nil {
		return err
	}
	return e.ddl(ctx, func() error {
		if e.cat.get(secretKey(x.Name)) != nil {
			if x.IfNotExists {
				return w.Notice(fmt.Sprintf("secret %q already exists, skipping", x.Name))
			}
			return pgerror.New(pgcode.DuplicateObject, "secret %q already exists", x.Name)
		}
		e.persist(&storage.CatalogEntry{ID: e.cat.allocID(), Kind: kindSecret, Name: secretKey(x.Name),
			SQL: "CREATE SECRET " + quoteIdent(x.Name) + " AS '********'", Options: map[string]string{"sealed": sealed}})
		return nil
	})
}

func (e *Engine) alterSecret(ctx context.Context, x *parser.AlterSecret) error {
	if err := checkSecretWith(x.With); err != nil {
		return err
	}
	sealed, err := e.sealSecret(x.Name, x.Value)
	if err != nil {
		return err
	}
	return e.ddl(ctx, func() error {
		old := e.cat.get(secretKey(x.Name))
		if old == nil || old.Kind != kindSecret {
			return pgerror.New(pgcode.UndefinedObject, "secret %q does not exist", x.Name)
		}
		ent := *old
		ent.Options = map[string]string{"sealed": sealed}
		e.persist(&ent)
		return nil
	})
}

// secretUsers returns the objects whose options refer to secret name.
func (e *Engine) secretUsers(name string) []*storage.CatalogEntry {
	var out []*storage.CatalogEntry
	for _, ent := range e.cat.list("") {
		for _, v := range ent.Options {
			if n, ok := connector.SecretRefName(v); ok && n == name {
				out = append(out, ent)
				break
			}
		}
	}
	return out
}

func (e *Engine) dropSecret(ctx context.Context, x *parser.Drop) error {
	return e.ddl(ctx, func() error {
		for _, name := range x.Names {
			ent := e.cat.get(secretKey(name))
			if ent == nil || ent.Kind != kindSecret {
				if x.IfExists {
					continue
				}
				return pgerror.New(pgcode.UndefinedObject, "secret %q does not exist", name)
			}
			if users := e.secretUsers(name); len(users) > 0 {
				var lines []string
				for _, u := range users {
					lines = append(lines, fmt.Sprintf("%s %s depends on secret %s", u.Kind, u.Name, name))
				}
				return pgerror.New(pgcode.DependentObjectsStillExist, "cannot drop secret %s because other objects depend on it", name).
					WithDetail("%s", strings.Join(lines, "\n")).
					WithHint("Drop the objects that use the secret first.")
			}
			e.dropOne(ent)
		}
		return nil
	})
}

// showSecrets is SHOW SECRETS: the names, never the values.
func (s *session) showSecrets(w pgwire.ResultWriter) error {
	var rows []types.Row
	for _, ent := range s.e.cat.list(kindSecret) {
		rows = append(rows, textRow(strings.TrimPrefix(ent.Name, "secret:")))
	}
	return s.writeRows(w, textCols("Name"), rows, "SHOW")
}

// runSecretStmt runs CREATE and ALTER SECRET. Like CREATE DATABASE in
// PostgreSQL they run on their own, outside a transaction block (a block
// defers its DDL to COMMIT, and a secret's value is sealed at once).
func (s *session) runSecretStmt(ctx context.Context, st parser.Statement, w pgwire.ResultWriter) error {
	if s.tx != nil {
		tag := "CREATE SECRET"
		if _, ok := st.(*parser.AlterSecret); ok {
			tag = "ALTER SECRET"
		}
		return pgerror.New(pgcode.ActiveSQLTransaction, "%s cannot run inside a transaction block", tag)
	}
	switch x := st.(type) {
	case *parser.CreateSecret:
		if err := s.e.createSecret(ctx, x, w); err != nil {
			return err
		}
		return w.Complete("CREATE SECRET")
	case *parser.AlterSecret:
		if err := s.e.alterSecret(ctx, x); err != nil {
			return err
		}
		return w.Complete("ALTER SECRET")
	}
	return pgerror.Unsupported("statement %T", st)
}
