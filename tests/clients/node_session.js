// node-postgres' session of the client matrix (run by TestClientNodePostgres,
// with NODE_PATH pointing at a cache directory holding pg@8).
//
// node-postgres uses the extended protocol with untyped text parameters
// (Buffers go as binary) and parses text results with pg-types. Its binary
// result mode (binary: true) is not exercised: with pg@8's own pg-types it
// decodes garbage from PostgreSQL too. Transactions are plain
// BEGIN/COMMIT/ROLLBACK statements.
//
// Where Sluice differs on purpose (CLIENT_TARGET=sluice): the view is a
// MATERIALIZED VIEW on Sluice and a VIEW on PostgreSQL, and FLUSH makes
// acknowledged writes visible before a step reads them (read_your_writes
// checks the same without FLUSH).

'use strict';

const { Client } = require('pg');
const assert = require('assert');

const sluice = process.env.CLIENT_TARGET === 'sluice';
const client = new Client(); // the PG* environment variables

async function q(text, values, opts) {
  return client.query(Object.assign({ text, values }, opts || {}));
}

async function sync() {
  if (sluice) await q('FLUSH'); // Sluice: make acknowledged writes visible
}

// norm turns a value into something JSON can compare exactly.
function norm(v) {
  if (v === null || v === undefined) return null;
  if (Buffer.isBuffer(v)) return { hex: v.toString('hex') };
  if (v instanceof Date) return { date: v.toISOString() };
  if (Array.isArray(v)) return v.map(norm);
  if (typeof v === 'object' && typeof v.toISOString === 'function') return { interval: v.toISOString() };
  return v;
}

function expect(got, want, what) {
  const g = JSON.stringify(norm(got));
  const w = JSON.stringify(norm(want));
  if (g !== w) throw new Error(`${what}: got ${g}, want ${w}`);
}

async function expectCode(fn, code, what) {
  try {
    await fn();
  } catch (e) {
    if (e.code !== code) throw new Error(`${what}: got ${e.code} ${e.message}, want SQLSTATE ${code}`);
    return;
  }
  throw new Error(`${what}: no error, want SQLSTATE ${code}`);
}

const allBytes = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
const COLS = ['b', 'i2', 'i4', 'i8', 'f4', 'f8', 'n', 't', 'vc', 'bt', 'd', 'tm', 'ts', 'tz', 'iv', 'j', 'ta'];
const json1 = { a: 1, b: [true, null, 'x'], c: { d: 'é' } };
const json2 = [1, 'two', { three: 3.5 }];

// What goes in (parameters) and what node-postgres returns, per row. int8
// and numeric come back as strings, dates as Date (TZ=UTC), times as
// strings, intervals as postgres-interval objects.
const TYPE_ROWS = {
  1: {
    in: [true, -32768, -2147483648, '-9223372036854775808', 1.5, -2.25e10, '-123.4500',
      "héllo wörld ☃ 𝄞 \t'q' \"dq\" \\ back", 'varchar', allBytes, '2024-02-29', '13:14:15.123456',
      '2024-03-05 10:20:30.123456', '2024-03-05 10:20:30.123456+02', '3 days 04:05:06.789', JSON.stringify(json1),
      ['a', 'b c', null, 'é"\\']],
    out: [true, -32768, -2147483648, '-9223372036854775808', 1.5, -2.25e10, '-123.4500',
      "héllo wörld ☃ 𝄞 \t'q' \"dq\" \\ back", 'varchar', allBytes, new Date('2024-02-29T00:00:00Z'),
      '13:14:15.123456', new Date('2024-03-05T10:20:30.123Z'), new Date('2024-03-05T08:20:30.123Z'),
      { interval: 'P0Y0M3DT4H5M6.789S' }, json1, ['a', 'b c', null, 'é"\\']],
  },
  2: {
    in: [false, 32767, 2147483647, '9223372036854775807', 0.1, 1e300,
      '12345678901234567890123456789.123456789012345678', '', '', Buffer.alloc(0), '1999-12-31', '00:00:00',
      '1970-01-01 00:00:00', '2000-01-01 00:00:00+00', '-1 seconds', JSON.stringify(json2), []],
    out: [false, 32767, 2147483647, '9223372036854775807', 0.1, 1e300,
      '12345678901234567890123456789.123456789012345678', '', '', Buffer.alloc(0), new Date('1999-12-31T00:00:00Z'),
      '00:00:00', new Date('1970-01-01T00:00:00Z'), new Date('2000-01-01T00:00:00Z'),
      { interval: 'P0Y0M0DT0H0M-1S' }, json2, []],
  },
  3: { in: COLS.map(() => null), out: COLS.map(() => null) },
};

const steps = {
  async ddl() {
    await q('CREATE TABLE items (id bigint PRIMARY KEY, name text NOT NULL, qty int, price numeric(10,2))');
    await q('CREATE TABLE notes (id int PRIMARY KEY, body text)');
    await q('CREATE TABLE types (id int PRIMARY KEY, b boolean, i2 smallint, i4 integer, i8 bigint,' +
      ' f4 real, f8 double precision, n numeric, t text, vc varchar(20), bt bytea, d date,' +
      ' tm time, ts timestamp, tz timestamptz, iv interval, j jsonb, ta text[])');
    // Sluice's views are materialized (streaming); PostgreSQL's plain.
    await q(`CREATE ${sluice ? 'MATERIALIZED VIEW' : 'VIEW'} items_summary AS ` +
      'SELECT count(*) AS n, sum(qty) AS total_qty FROM items');
  },

  async dml() {
    for (const r of [[1, 'apple', 10, '1.25'], [2, 'pear', 20, '2.50'], [3, 'fig', 30, '3.75']]) {
      const res = await q('INSERT INTO items (id, name, qty, price) VALUES ($1, $2, $3, $4)', r);
      expect(res.rowCount, 1, 'INSERT rowCount');
    }
    expect((await q('UPDATE items SET qty = qty + $1 WHERE id = $2', [5, 2])).rowCount, 1, 'UPDATE rowCount');
    expect((await q('DELETE FROM items WHERE id = $1', [3])).rowCount, 1, 'DELETE rowCount');
    await sync();
    const res = await q('SELECT id, name, qty, price FROM items WHERE id >= $1 ORDER BY id', [1], { rowMode: 'array' });
    expect(res.rows, [['1', 'apple', 10, '1.25'], ['2', 'pear', 25, '2.50']], 'items');
  },

  async read_your_writes() {
    await q('INSERT INTO notes VALUES ($1, $2)', [1, 'first']);
    const res = await q('SELECT body FROM notes WHERE id = $1', [1], { rowMode: 'array' });
    expect(res.rows, [['first']], 'the row just inserted, without FLUSH');
  },

  async commit() {
    await q('BEGIN');
    await q('INSERT INTO items VALUES ($1, $2, $3, $4)', [4, 'plum', 40, '4.00']);
    await q('INSERT INTO items VALUES ($1, $2, $3, $4)', [5, 'lime', 50, '5.00']);
    await q('COMMIT');
    await sync();
    const res = await q('SELECT id FROM items ORDER BY id', [], { rowMode: 'array' });
    expect(res.rows, [['1'], ['2'], ['4'], ['5']], 'ids after COMMIT');
  },

  async view() {
    await sync();
    const res = await q('SELECT n, total_qty FROM items_summary', [], { rowMode: 'array' });
    expect(res.rows, [['4', '125']], 'items_summary');
  },

  async rollback() {
    await q('BEGIN');
    await q('INSERT INTO items VALUES ($1, $2, $3, $4)', [6, 'date', 60, '6.00']);
    await q('UPDATE items SET qty = 0 WHERE id = $1', [1]);
    await q('ROLLBACK');
    await sync();
    const res = await q('SELECT id, qty FROM items ORDER BY id', [], { rowMode: 'array' });
    expect(res.rows, [['1', 10], ['2', 25], ['4', 40], ['5', 50]], 'items after ROLLBACK');
  },

  async types() {
    const marks = COLS.map((_, i) => `$${i + 2}`).join(', ');
    for (const [id, row] of Object.entries(TYPE_ROWS)) {
      await q(`INSERT INTO types (id, ${COLS.join(', ')}) VALUES ($1, ${marks})`, [Number(id), ...row.in]);
    }
    await sync();
    const res = await q(`SELECT id, ${COLS.join(', ')} FROM types WHERE id < 10 ORDER BY id`, [], { rowMode: 'array' });
    expect(res.rows.map((r) => r[0]), [1, 2, 3], 'ids');
    for (const r of res.rows) {
      COLS.forEach((c, i) => expect(r[i + 1], TYPE_ROWS[r[0]].out[i], `row ${r[0]} column ${c}`));
    }
    for (const [v, text] of [['1E+20', '100000000000000000000'], ['-0.000001', '-0.000001'], ['0.00', '0.00'],
      ['-1.5E-10', '-0.00000000015']]) {
      const got = await q('SELECT $1::numeric', [v], { rowMode: 'array' });
      expect(got.rows, [[text]], `numeric ${v}`);
    }
    const iv = await q('SELECT $1::interval::text, $1::interval', ['1 year 2 mons 3 days 04:05:06.789'], { rowMode: 'array' });
    expect(iv.rows, [['1 year 2 mons 3 days 04:05:06.789', { interval: 'P1Y2M3DT4H5M6.789S' }]],
      'interval with months');
  },

  async jsonb() {
    const res = await q(`SELECT j::text, j->'c'->>'d', j @> '{"a": 1}', jsonb_typeof(j->'b') FROM types WHERE id = 1`,
      [], { rowMode: 'array' });
    expect(res.rows, [['{"a": 1, "b": [true, null, "x"], "c": {"d": "é"}}', 'é', true, 'array']], 'jsonb');
  },

  async errors() {
    for (const [sql, code] of [['SELECT * FROM no_such_table', '42P01'], ['SELECT no_such_column FROM items', '42703'],
      ["INSERT INTO items (id, name) VALUES (1, 'again')", '23505'], ['SELEC 1', '42601'],
      ['SELECT qty / 0 FROM items WHERE id = 1', '22012']]) {
      await expectCode(() => q(sql), code, sql);
      await expectCode(() => q(sql, [], { queryMode: 'extended' }), code, sql + ' (extended)');
    }
    expect((await q('SELECT 1 AS one')).rows, [{ one: 1 }], 'the session after errors');
  },

  async failed_tx() {
    await q('BEGIN');
    await expectCode(() => q('SELECT * FROM no_such_table'), '42P01', 'error in a block');
    await expectCode(() => q('SELECT 1'), '25P02', 'statement after the error');
    await q('ROLLBACK');
    expect((await q('SELECT 1 AS one')).rows, [{ one: 1 }], 'after ROLLBACK');
  },
};

async function main() {
  await client.connect();
  for (const [name, fn] of Object.entries(steps)) {
    let error = '';
    try {
      await fn();
    } catch (e) {
      error = e.code ? `ERROR ${e.code}: ${e.message}` : String(e.message || e);
      try {
        await q('ROLLBACK'); // leave any open block (a WARNING outside one)
      } catch (e2) {
        console.error(`recovering after ${name}: ${e2.message}`);
      }
    }
    console.log(JSON.stringify({ step: name, ok: error === '', error }));
  }
  await client.end();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
