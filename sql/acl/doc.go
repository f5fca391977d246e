// Package acl owns PostgreSQL's access-control lists: the privilege bits,
// aclitem text (`alice=arwdDxt/alice`, `=r/alice` for PUBLIC, `*` after a
// letter for WITH GRANT OPTION), and granting, revoking and checking over
// a list. It knows nothing of roles or the catalog: who is a superuser and
// who owns an object is the caller's business. It is a leaf package.
package acl
