package eval

// QuoteIdent is Postgres' quote_ident: s as is when it is a lower-case
// identifier that is not a reserved word, else double-quoted. Catalog
// answers (pg_indexes.indexdef, ...) quote names with it.
func QuoteIdent(s string) string { return quoteIdent(s) }
