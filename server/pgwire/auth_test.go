package pgwire

import (
	"encoding/base64"
	"testing"
)

// TestSCRAMVerifierMatchesPostgres recomputes a verifier PostgreSQL 15
// stored for the password "pencil" (CREATE ROLE ... PASSWORD 'pencil' with
// password_encryption = scram-sha-256) from its salt and iteration count.
func TestSCRAMVerifierMatchesPostgres(t *testing.T) {
	const pg = "SCRAM-SHA-256$4096:1eSNmO4Z9SvEtTmbxzQRCQ==$oQvKaQoQ3Jz0I+O1gMLlwtQCpkPY0km1PfOva75qS3s=:FFtBBvzvPzDgZ8yyM/r9jth83ooWXby7YWs2dIPpoCg="
	sec, ok := parseSCRAMVerifier(pg)
	if !ok || sec.iter != 4096 {
		t.Fatalf("parse: %+v %v", sec, ok)
	}
	salt, _ := base64.StdEncoding.DecodeString("1eSNmO4Z9SvEtTmbxzQRCQ==")
	if got := scramVerifierSalt("pencil", salt, 4096); got != pg {
		t.Fatalf("got  %s\nwant %s", got, pg)
	}
	if !IsPasswordVerifier(pg) || !IsPasswordVerifier(MD5Verifier("pencil", "u")) || IsPasswordVerifier("pencil") ||
		IsPasswordVerifier("md5notahexdigestnotahexdigestxxxxx") {
		t.Fatal("IsPasswordVerifier")
	}
	// md5 as PostgreSQL 15 stored it for role alice_sluice_probe.
	if got := MD5Verifier("pencil", "alice_sluice_probe"); got != "md5096812aed02b643d737e294665b0dc18" {
		t.Fatalf("md5: %s", got)
	}
}
