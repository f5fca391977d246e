package server

import (
	"strconv"

	"sluice/sql/types"
	"sluice/storage"
)

// This file defines the information_schema relations (see system.go). As
// in Postgres, materialized views are in neither tables nor columns;
// sources and sinks are FOREIGN tables.

// infoRel is a relation as information_schema lists it.
type infoRel struct {
	schema, name string
	kind         string // pg_class relkind
	cols         []types.Column
	notNull      []bool
	ents         []storage.ColumnEntry // user tables' columns: defaults, identity (nil for system ones)
}

// infoRels returns the relations information_schema shows.
func infoRels(env *sysEnv) []infoRel {
	var out []infoRel
	for _, t := range sortedSysTables() {
		out = append(out, infoRel{schema: t.schema, name: t.name, kind: string(t.kind), cols: t.cols, notNull: make([]bool, len(t.cols))})
	}
	for _, r := range userRels(env) {
		if r.kind == "m" || r.kind == "S" {
			continue
		}
		sch, name := relSchema(r.e.Name)
		ir := infoRel{schema: sch, name: name, kind: r.kind, ents: r.e.Columns}
		for _, c := range r.e.Columns {
			ir.cols = append(ir.cols, types.Column{Name: c.Name, Type: c.Type()})
			ir.notNull = append(ir.notNull, c.NotNull)
		}
		out = append(out, ir)
	}
	return out
}

// yesNo is information_schema's yes_or_no.
func yesNo(b bool) string {
	if b {
		return "YES"
	}
	return "NO"
}

// dataType is information_schema's data_type of a type: its SQL name
// without modifiers, ARRAY for arrays.
func dataType(t types.T) string {
	if t.Fam == types.TextArray {
		return "ARRAY"
	}
	return types.T{Fam: t.Fam}.String()
}

// udtName is the type's pg_type.typname.
func udtName(t types.T) string {
	for _, ti := range pgTypes {
		if ti.t.Fam == t.Fam {
			return ti.name
		}
	}
	return t.String()
}

// numericFacts returns numeric_precision, numeric_precision_radix and
// numeric_scale of t (nil where Postgres has NULL).
func numericFacts(t types.T) (prec, radix, scale any) {
	switch t.Fam {
	case types.Int2:
		return 16, 2, 0
	case types.Int4:
		return 32, 2, 0
	case types.Int8:
		return 64, 2, 0
	case types.Float4:
		return 24, 2, nil
	case types.Float8:
		return 53, 2, nil
	case types.Numeric:
		if t.Prec > 0 {
			s := int(t.Scale)
			if s < 0 {
				s = 0
			}
			return int(t.Prec), 10, s
		}
		return nil, 10, nil
	}
	return nil, nil, nil
}

func init() {
	add := func(name string, oid int64, cols string, rows func(env *sysEnv) []types.Row) {
		addSys(&sysTable{schema: "information_schema", name: name, oid: oid, kind: 'v', cols: colSpec(cols), rows: rows})
	}
	add("schemata", 12101, "catalog_name:name schema_name:name schema_owner:name default_character_set_catalog:name "+
		"default_character_set_schema:name default_character_set_name:name sql_path:varchar", func(env *sysEnv) []types.Row {
		var out []types.Row
		for _, s := range []string{"information_schema", "pg_catalog", "public"} {
			out = append(out, mkRow(env.db, s, "sluice", nil, nil, nil, nil))
		}
		return out
	})
	add("tables", 12102, "table_catalog:name table_schema:name table_name:name table_type:varchar "+
		"self_referencing_column_name:name reference_generation:varchar user_defined_type_catalog:name "+
		"user_defined_type_schema:name user_defined_type_name:name is_insertable_into:varchar is_typed:varchar "+
		"commit_action:varchar", func(env *sysEnv) []types.Row {
		var out []types.Row
		for _, r := range infoRels(env) {
			tt := "BASE TABLE"
			switch r.kind {
			case "v":
				tt = "VIEW"
			case "f":
				tt = "FOREIGN"
			}
			out = append(out, mkRow(env.db, r.schema, r.name, tt, nil, nil, nil, nil, nil,
				yesNo(r.kind == "r" && r.schema == "public"), "NO", nil))
		}
		return out
	})
	add("columns", 12103, "table_catalog:name table_schema:name table_name:name column_name:name "+
		"ordinal_position:int4 column_default:varchar is_nullable:varchar data_type:varchar "+
		"character_maximum_length:int4 character_octet_length:int4 numeric_precision:int4 "+
		"numeric_precision_radix:int4 numeric_scale:int4 datetime_precision:int4 interval_type:varchar "+
		"interval_precision:int4 character_set_catalog:name character_set_schema:name character_set_name:name "+
		"collation_catalog:name collation_schema:name collation_name:name domain_catalog:name domain_schema:name "+
		"domain_name:name udt_catalog:name udt_schema:name udt_name:name scope_catalog:name scope_schema:name "+
		"scope_name:name maximum_cardinality:int4 dtd_identifier:name is_self_referencing:varchar "+
		"is_identity:varchar identity_generation:varchar identity_start:varchar identity_increment:varchar "+
		"identity_maximum:varchar identity_minimum:varchar identity_cycle:varchar is_generated:varchar "+
		"generation_expression:varchar is_updatable:varchar", func(env *sysEnv) []types.Row {
		var out []types.Row
		for _, r := range infoRels(env) {
			for i, c := range r.cols {
				t := c.Type
				var maxLen, octets, dtPrec any
				switch t.Fam {
				case types.Varchar:
					if t.Prec > 0 {
						maxLen, octets = int(t.Prec), 4*int(t.Prec)
					} else {
						octets = 1073741824
					}
				case types.Text:
					octets = 1073741824
				case types.Date:
					dtPrec = 0
				case types.Time, types.Timestamp, types.TimestampTZ, types.Interval:
					dtPrec = 6
				}
				prec, radix, scale := numericFacts(t)
				pos := strconv.Itoa(i + 1)
				dflt, isIdent, identGen := columnDefault(r.ents, i)
				out = append(out, mkRow(env.db, r.schema, r.name, c.Name,
					i+1, dflt, yesNo(!r.notNull[i]), dataType(t),
					maxLen, octets, prec,
					radix, scale, dtPrec, nil,
					nil, nil, nil, nil,
					nil, nil, nil, nil, nil,
					nil, env.db, "pg_catalog", udtName(t), nil, nil,
					nil, nil, pos, "NO",
					isIdent, identGen, nil, nil,
					nil, nil, "NO", "NEVER",
					nil, yesNo(r.kind == "r" && r.schema == "public")))
			}
		}
		return out
	})
}
