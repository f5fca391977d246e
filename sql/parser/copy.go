package parser

import (
	"strings"
)

// Copy is COPY, in PostgreSQL's grammar:
//
//	COPY [BINARY] table [(cols)] FROM|TO STDIN|STDOUT|'file'|PROGRAM 'cmd'
//	     [[USING] DELIMITERS 'x'] [WITH] options [WHERE cond]
//	COPY (query) TO STDOUT|'file'|PROGRAM 'cmd' [WITH] options
//
// where options is either the list `(name [arg], ...)` or the old
// space-separated words (BINARY, CSV, HEADER, DELIMITER [AS] 'x', NULL
// [AS] 'x', QUOTE [AS] 'x', ESCAPE [AS] 'x', FORCE QUOTE cols|*, FORCE NOT
// NULL cols, FORCE NULL cols, ENCODING 'x', FREEZE), which are turned into
// the same CopyOptions (BINARY → format binary, CSV → format csv, FORCE
// QUOTE → force_quote, ...). The meaning of the options is checked by the
// server, as PostgreSQL's ProcessCopyOptions does.
type Copy struct {
	stmtText
	// Table is the table name (dotted as written); "" when Query is set.
	Table   string
	Columns []string // the column list; nil = every column
	Query   *Query   // COPY (query) TO
	// Subscribe is COPY (SUBSCRIBE …) TO STDOUT.
	Subscribe *Subscribe
	From      bool // FROM; false = TO
	// File is the server file name ('file'); "" for STDIN/STDOUT.
	File string
	// Program is set for PROGRAM 'cmd' (the command is in File).
	Program bool
	Options []CopyOption
	// Where is set when a WHERE clause follows (COPY FROM ... WHERE).
	Where bool
}

// CopyOption is one COPY option.
type CopyOption struct {
	Name string // lower case: format, header, delimiter, null, quote, ...
	// Value is the argument: a string's contents, a number's text or a
	// word (lower-cased); "" without one (HasValue false).
	Value    string
	HasValue bool
	List     []string // a ( ... ) argument
	IsList   bool
	Star     bool // the argument is *
	Pos      int  // 1-based character position of the option's name
}

// copyStmt parses COPY.
func (r *rewriter) copyStmt() Statement {
	r.expectWord("copy")
	c := &Copy{}
	if r.tok().isPunct("(") {
		lo := r.i + 1
		depth, hi := 0, -1
		for k := r.i; k < len(r.toks) && r.toks[k].kind != tkEOF; k++ {
			switch {
			case r.toks[k].isPunct("("):
				depth++
			case r.toks[k].isPunct(")"):
				depth--
			}
			if depth == 0 {
				hi = k
				break
			}
		}
		if hi < 0 {
			r.i = len(r.toks) - 1
			r.syntaxErr(r.tok())
		}
		if hi == lo {
			r.syntaxErr(r.toks[hi])
		}
		if r.i = lo; r.isSubscribe() {
			c.Subscribe = r.subscribe(hi)
		} else {
			c.Query = r.subQuery(lo, hi)
		}
		r.i = hi + 1
		r.expectWord("to")
	} else {
		if r.tok().isWord("binary") {
			c.Options = append(c.Options, CopyOption{Name: "format", Value: "binary", HasValue: true, Pos: charPos(r.src, r.tok().pos)})
			r.i++
		}
		c.Table = r.nameChainString()
		if r.tok().isPunct("(") {
			c.Columns = r.identNames()
		}
		switch t := r.tok(); {
		case t.isWord("from"):
			c.From = true
		case t.isWord("to"):
		default:
			r.syntaxErr(t)
		}
		r.i++
	}
	if r.tok().isWord("program") {
		c.Program = true
		r.i++
		t := r.tok()
		if t.kind != tkString {
			r.syntaxErr(t)
		}
		c.File = t.val
		r.i++
	} else {
		switch t := r.tok(); {
		case t.isWord("stdin"), t.isWord("stdout"):
		case t.kind == tkString:
			c.File = t.val
		default:
			r.syntaxErr(t)
		}
		r.i++
	}
	if c.Query == nil {
		// copy_delimiter: [USING] DELIMITERS 'x'
		if r.tok().isWord("using") && r.peek(1).isWord("delimiters") {
			r.i++
		}
		if t := r.tok(); t.isWord("delimiters") {
			r.i++
			v := r.tok()
			if v.kind != tkString {
				r.syntaxErr(v)
			}
			c.Options = append(c.Options, CopyOption{Name: "delimiter", Value: v.val, HasValue: true, Pos: charPos(r.src, t.pos)})
			r.i++
		}
	}
	if r.tok().isWord("with") {
		r.i++
	}
	if r.tok().isPunct("(") {
		c.Options = append(c.Options, r.copyGenericOptions()...)
	} else {
		c.Options = append(c.Options, r.copyOldOptions()...)
	}
	if c.From && r.tok().isWord("where") {
		c.Where = true
		r.i = len(r.toks) - 1
	}
	r.expectEOF()
	return c
}

// copyGenericOptions reads ( name [arg], ... ).
func (r *rewriter) copyGenericOptions() []CopyOption {
	r.expectPunct("(")
	var opts []CopyOption
	for {
		n := r.tok()
		if n.kind != tkIdent && n.kind != tkQIdent {
			r.syntaxErr(n)
		}
		o := CopyOption{Name: strings.ToLower(n.val), Pos: charPos(r.src, n.pos)}
		r.i++
		switch t := r.tok(); {
		case t.isPunct(",") || t.isPunct(")"):
		case t.isOp("*"):
			o.Star = true
			r.i++
		case t.isPunct("("):
			o.IsList = true
			r.i++
			for {
				v := r.tok()
				if v.kind != tkIdent && v.kind != tkQIdent && v.kind != tkString {
					r.syntaxErr(v)
				}
				o.List = append(o.List, v.val)
				r.i++
				if r.tok().isPunct(",") {
					r.i++
					continue
				}
				r.expectPunct(")")
				break
			}
		case t.kind == tkString || t.kind == tkIdent || t.kind == tkQIdent || t.kind == tkNumber:
			o.Value, o.HasValue = t.val, true
			r.i++
		case (t.isOp("-") || t.isOp("+")) && r.peek(1).kind == tkNumber:
			o.Value, o.HasValue = strings.TrimPrefix(t.val, "+")+r.peek(1).val, true
			r.i += 2
		default:
			r.syntaxErr(t)
		}
		opts = append(opts, o)
		if r.tok().isPunct(",") {
			r.i++
			continue
		}
		r.expectPunct(")")
		return opts
	}
}

// copyOldOptions reads the pre-9.0 option words.
func (r *rewriter) copyOldOptions() []CopyOption {
	var opts []CopyOption
	str := func() string {
		if r.tok().isWord("as") {
			r.i++
		}
		v := r.tok()
		if v.kind != tkString {
			r.syntaxErr(v)
		}
		r.i++
		return v.val
	}
	for {
		t := r.tok()
		o := CopyOption{Pos: charPos(r.src, t.pos)}
		if t.kind != tkIdent {
			return opts
		}
		r.i++
		switch t.val {
		case "binary":
			o.Name, o.Value, o.HasValue = "format", "binary", true
		case "csv":
			o.Name, o.Value, o.HasValue = "format", "csv", true
		case "freeze", "header":
			o.Name = t.val
		case "delimiter", "null", "quote", "escape", "encoding":
			o.Name = t.val
			if t.val == "encoding" {
				v := r.tok()
				if v.kind != tkString {
					r.syntaxErr(v)
				}
				r.i++
				o.Value = v.val
			} else {
				o.Value = str()
			}
			o.HasValue = true
		case "force":
			switch w := r.tok(); {
			case w.isWord("quote"):
				r.i++
				o.Name = "force_quote"
				if r.tok().isOp("*") {
					o.Star = true
					r.i++
				} else {
					o.List, o.IsList = r.identNames0(), true
				}
			case w.isWord("not") && r.peek(1).isWord("null"):
				r.i += 2
				o.Name, o.List, o.IsList = "force_not_null", r.identNames0(), true
			case w.isWord("null"):
				r.i++
				o.Name, o.List, o.IsList = "force_null", r.identNames0(), true
			default:
				r.syntaxErr(w)
			}
		default:
			r.i--
			return opts
		}
		opts = append(opts, o)
	}
}

// identNames0 reads the columnList of the old COPY options: names
// separated by commas, without parentheses.
func (r *rewriter) identNames0() []string {
	var names []string
	for {
		n := r.tok()
		if !isName(n) {
			r.syntaxErr(n)
		}
		names = append(names, n.val)
		r.i++
		if !r.tok().isPunct(",") {
			return names
		}
		r.i++
	}
}
