// pgjdbc's session of the client matrix (run by TestClientPgJDBC, which
// compiles it with javac against /usr/share/java/postgresql.jar).
//
// pgjdbc uses the extended protocol with typed parameters; after
// prepareThreshold executions of a statement (or at once with
// prepareThreshold=-1, the binary step) it uses named server-side
// statements and binary transfer. Also: DatabaseMetaData (getTables,
// getColumns, getPrimaryKeys) and setObject with PGobject (jsonb) and
// PGInterval.
//
// Arguments: the JDBC URL and the target ("sluice" or "postgres"). Where
// Sluice differs on purpose: the view is a MATERIALIZED VIEW on Sluice and a
// VIEW on PostgreSQL, and on Sluice FLUSH makes writes visible before a step
// reads them (read_your_writes checks the same without FLUSH).

import java.math.BigDecimal;
import java.sql.*;
import java.time.*;
import java.util.*;

import org.postgresql.core.BaseConnection;
import org.postgresql.core.TransactionState;
import org.postgresql.util.PGInterval;
import org.postgresql.util.PGobject;

public class PgjdbcSession {
    static String url;
    static boolean sluice;
    static Connection conn;

    static class StepFailed extends Exception {
        StepFailed(String m) { super(m); }
    }

    interface Step { void run() throws Exception; }

    public static void main(String[] args) throws Exception {
        url = args[0];
        sluice = args[1].equals("sluice");
        conn = DriverManager.getConnection(url);
        step("ddl", PgjdbcSession::ddl);
        step("dml", PgjdbcSession::dml);
        step("read_your_writes", PgjdbcSession::readYourWrites);
        step("commit", PgjdbcSession::commit);
        step("view", PgjdbcSession::view);
        step("rollback", PgjdbcSession::rollback);
        step("types", PgjdbcSession::types);
        step("jsonb", PgjdbcSession::jsonb);
        step("errors", PgjdbcSession::errors);
        step("failed_tx", PgjdbcSession::failedTx);
        step("binary", PgjdbcSession::binary);
        step("metadata", PgjdbcSession::metadata);
        step("setobject", PgjdbcSession::setObject);
        conn.close();
    }

    static void step(String name, Step s) {
        String err = null;
        try {
            s.run();
        } catch (SQLException e) {
            err = "ERROR " + e.getSQLState() + ": " + e.getMessage();
        } catch (Exception e) {
            err = e.getClass().getSimpleName() + ": " + e.getMessage();
        }
        if (err != null) {
            try {
                if (!conn.getAutoCommit()) {
                    conn.rollback();
                    conn.setAutoCommit(true);
                }
            } catch (SQLException e) {
                System.err.println("recovering after " + name + ": " + e);
            }
        }
        System.out.println("{\"step\": " + json(name) + ", \"ok\": " + (err == null) + ", \"error\": " + json(err == null ? "" : err) + "}");
        System.out.flush();
    }

    static String json(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }

    static void expect(Object got, Object want, String what) throws StepFailed {
        if (!Objects.deepEquals(got, want)) {
            throw new StepFailed(what + ": got " + show(got) + ", want " + show(want));
        }
    }

    static String show(Object o) {
        if (o instanceof Object[]) return Arrays.deepToString((Object[]) o);
        if (o instanceof byte[]) return Arrays.toString((byte[]) o);
        return o == null ? "null" : o + " (" + o.getClass().getSimpleName() + ")";
    }

    static void expectState(Step s, String state, String what) throws Exception {
        try {
            s.run();
        } catch (SQLException e) {
            if (!state.equals(e.getSQLState())) {
                throw new StepFailed(what + ": got " + e.getSQLState() + " " + e.getMessage() + ", want SQLSTATE " + state);
            }
            return;
        }
        throw new StepFailed(what + ": no error, want SQLSTATE " + state);
    }

    static void exec(String sql) throws SQLException {
        try (Statement st = conn.createStatement()) {
            st.execute(sql);
        }
    }

    static void sync() throws SQLException {
        if (sluice) exec("FLUSH"); // Sluice: make acknowledged writes visible
    }

    /** The rows of a query as lists of getObject values. */
    static List<List<Object>> rows(Connection c, String sql, Object... params) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            for (int i = 0; i < params.length; i++) ps.setObject(i + 1, params[i]);
            try (ResultSet rs = ps.executeQuery()) {
                List<List<Object>> out = new ArrayList<>();
                int n = rs.getMetaData().getColumnCount();
                while (rs.next()) {
                    List<Object> row = new ArrayList<>();
                    for (int i = 1; i <= n; i++) row.add(rs.getObject(i));
                    out.add(row);
                }
                return out;
            }
        }
    }

    static List<Object> row(Object... vals) { return Arrays.asList(vals); }

    static void ddl() throws Exception {
        exec("CREATE TABLE items (id bigint PRIMARY KEY, name text NOT NULL, qty int, price numeric(10,2))");
        exec("CREATE TABLE notes (id int PRIMARY KEY, body text)");
        exec("CREATE TABLE types (id int PRIMARY KEY, b boolean, i2 smallint, i4 integer, i8 bigint,"
                + " f4 real, f8 double precision, n numeric, t text, vc varchar(20), bt bytea, d date,"
                + " tm time, ts timestamp, tz timestamptz, iv interval, j jsonb, ta text[])");
        // Sluice's views are materialized (streaming); PostgreSQL's plain.
        exec("CREATE " + (sluice ? "MATERIALIZED VIEW" : "VIEW")
                + " items_summary AS SELECT count(*) AS n, sum(qty) AS total_qty FROM items");
    }

    static void insertItem(long id, String name, int qty, String price) throws SQLException {
        try (PreparedStatement ps = conn.prepareStatement("INSERT INTO items (id, name, qty, price) VALUES (?, ?, ?, ?)")) {
            ps.setLong(1, id);
            ps.setString(2, name);
            ps.setInt(3, qty);
            ps.setBigDecimal(4, new BigDecimal(price));
            ps.executeUpdate();
        }
    }

    static void dml() throws Exception {
        try (PreparedStatement ps = conn.prepareStatement("INSERT INTO items (id, name, qty, price) VALUES (?, ?, ?, ?)")) {
            Object[][] rows = {{1L, "apple", 10, "1.25"}, {2L, "pear", 20, "2.50"}, {3L, "fig", 30, "3.75"}};
            for (Object[] r : rows) {
                ps.setLong(1, (Long) r[0]);
                ps.setString(2, (String) r[1]);
                ps.setInt(3, (Integer) r[2]);
                ps.setBigDecimal(4, new BigDecimal((String) r[3]));
                ps.addBatch();
            }
            expect(ps.executeBatch(), new int[] {1, 1, 1}, "batch counts");
        }
        try (PreparedStatement ps = conn.prepareStatement("UPDATE items SET qty = qty + ? WHERE id = ?")) {
            ps.setInt(1, 5);
            ps.setLong(2, 2);
            expect(ps.executeUpdate(), 1, "UPDATE count");
        }
        try (PreparedStatement ps = conn.prepareStatement("DELETE FROM items WHERE id = ?")) {
            ps.setLong(1, 3);
            expect(ps.executeUpdate(), 1, "DELETE count");
        }
        sync();
        expect(rows(conn, "SELECT id, name, qty, price FROM items WHERE id >= ? ORDER BY id", 1L),
                List.of(row(1L, "apple", 10, new BigDecimal("1.25")), row(2L, "pear", 25, new BigDecimal("2.50"))), "items");
    }

    static void readYourWrites() throws Exception {
        try (PreparedStatement ps = conn.prepareStatement("INSERT INTO notes VALUES (?, ?)")) {
            ps.setInt(1, 1);
            ps.setString(2, "first");
            ps.executeUpdate();
        }
        expect(rows(conn, "SELECT body FROM notes WHERE id = ?", 1), List.of(row("first")), "the row just inserted, without FLUSH");
    }

    static void commit() throws Exception {
        conn.setAutoCommit(false);
        insertItem(4, "plum", 40, "4.00");
        insertItem(5, "lime", 50, "5.00");
        conn.commit();
        conn.setAutoCommit(true);
        sync();
        expect(rows(conn, "SELECT id FROM items ORDER BY id"), List.of(row(1L), row(2L), row(4L), row(5L)), "ids after COMMIT");
    }

    static void view() throws Exception {
        sync();
        expect(rows(conn, "SELECT n, total_qty FROM items_summary"), List.of(row(4L, 125L)), "items_summary");
    }

    static void rollback() throws Exception {
        conn.setAutoCommit(false);
        insertItem(6, "date", 60, "6.00");
        exec("UPDATE items SET qty = 0 WHERE id = 1");
        conn.rollback();
        conn.setAutoCommit(true);
        sync();
        expect(rows(conn, "SELECT id, qty FROM items ORDER BY id"),
                List.of(row(1L, 10), row(2L, 25), row(4L, 40), row(5L, 50)), "items after ROLLBACK");
    }

    static final String[] TYPE_COLUMNS = {"b", "i2", "i4", "i8", "f4", "f8", "n", "t", "vc", "bt", "d", "tm", "ts", "tz", "iv", "j", "ta"};

    static byte[] allBytes() {
        byte[] b = new byte[256];
        for (int i = 0; i < 256; i++) b[i] = (byte) i;
        return b;
    }

    static PGobject jsonb(String text) throws SQLException {
        PGobject o = new PGobject();
        o.setType("jsonb");
        o.setValue(text);
        return o;
    }

    /** Row 1 and 2 of the types table as Java values (row 3 is all NULL). */
    static Object[][] typeRows() throws SQLException {
        return new Object[][] {
            {true, (short) -32768, -2147483648, Long.MIN_VALUE, 1.5f, -2.25e10, new BigDecimal("-123.4500"),
             "héllo wörld ☃ 𝄞 \t'q' \"dq\" \\ back", "varchar", allBytes(), LocalDate.of(2024, 2, 29),
             LocalTime.of(13, 14, 15, 123456000), LocalDateTime.of(2024, 3, 5, 10, 20, 30, 123456000),
             OffsetDateTime.of(2024, 3, 5, 10, 20, 30, 123456000, ZoneOffset.ofHours(2)),
             new PGInterval(0, 0, 3, 4, 5, 6.789), jsonb("{\"a\": 1, \"b\": [true, null, \"x\"], \"c\": {\"d\": \"é\"}}"),
             new String[] {"a", "b c", null, "é\"\\"}},
            {false, (short) 32767, 2147483647, Long.MAX_VALUE, 0.1f, 1e300,
             new BigDecimal("12345678901234567890123456789.123456789012345678"), "", "", new byte[0],
             LocalDate.of(1999, 12, 31), LocalTime.of(0, 0), LocalDateTime.of(1970, 1, 1, 0, 0),
             OffsetDateTime.of(2000, 1, 1, 0, 0, 0, 0, ZoneOffset.UTC), new PGInterval(0, 0, 0, 0, 0, -1.0),
             jsonb("[1, \"two\", {\"three\": 3.5}]"), new String[0]},
        };
    }

    static void insertTypes(Connection c, int offset) throws Exception {
        String sql = "INSERT INTO types (id, " + String.join(", ", TYPE_COLUMNS) + ") VALUES (?"
                + ", ?".repeat(TYPE_COLUMNS.length) + ")";
        Object[][] rows = typeRows();
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            for (int r = 0; r < 3; r++) {
                ps.setInt(1, offset + r + 1);
                for (int i = 0; i < TYPE_COLUMNS.length; i++) {
                    int p = i + 2;
                    Object v = r < 2 ? rows[r][i] : null;
                    if (r == 2) {
                        ps.setNull(p, Types.OTHER);
                        continue;
                    }
                    switch (TYPE_COLUMNS[i]) {
                        case "b": ps.setBoolean(p, (Boolean) v); break;
                        case "i2": ps.setShort(p, (Short) v); break;
                        case "i4": ps.setInt(p, (Integer) v); break;
                        case "i8": ps.setLong(p, (Long) v); break;
                        case "f4": ps.setFloat(p, (Float) v); break;
                        case "f8": ps.setDouble(p, (Double) v); break;
                        case "n": ps.setBigDecimal(p, (BigDecimal) v); break;
                        case "t": case "vc": ps.setString(p, (String) v); break;
                        case "bt": ps.setBytes(p, (byte[]) v); break;
                        case "ta": ps.setArray(p, c.createArrayOf("text", (Object[]) v)); break;
                        default: ps.setObject(p, v); // java.time, PGInterval, PGobject
                    }
                }
                ps.executeUpdate();
            }
        }
    }

    static void checkTypes(Connection c, int offset) throws Exception {
        Object[][] want = typeRows();
        String sql = "SELECT id, " + String.join(", ", TYPE_COLUMNS) + " FROM types WHERE id BETWEEN ? AND ? ORDER BY id";
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setInt(1, offset + 1);
            ps.setInt(2, offset + 9);
            try (ResultSet rs = ps.executeQuery()) {
                for (int r = 0; r < 3; r++) {
                    if (!rs.next()) throw new StepFailed("types: " + r + " rows, want 3");
                    expect(rs.getInt(1), offset + r + 1, "id");
                    for (int i = 0; i < TYPE_COLUMNS.length; i++) {
                        String col = TYPE_COLUMNS[i];
                        String what = "row " + (offset + r + 1) + " column " + col;
                        Object got;
                        switch (col) {
                            case "i2": got = rs.getShort(i + 2); break;
                            case "d": got = rs.getObject(i + 2, LocalDate.class); break;
                            case "tm": got = rs.getObject(i + 2, LocalTime.class); break;
                            case "ts": got = rs.getObject(i + 2, LocalDateTime.class); break;
                            case "tz": got = rs.getObject(i + 2, OffsetDateTime.class); break;
                            case "ta": {
                                Array a = rs.getArray(i + 2);
                                got = a == null ? null : a.getArray();
                                break;
                            }
                            default: got = rs.getObject(i + 2);
                        }
                        if (r == 2) {
                            if (col.equals("i2")) got = rs.wasNull() ? null : got;
                            expect(got, null, what);
                            continue;
                        }
                        Object w = want[r][i];
                        if (col.equals("i2")) w = (Short) w;
                        if (col.equals("tz")) {
                            OffsetDateTime g = (OffsetDateTime) got, wt = (OffsetDateTime) w;
                            if (g == null || !g.isEqual(wt)) throw new StepFailed(what + ": got " + g + ", want " + wt);
                            continue;
                        }
                        expect(got, w, what);
                    }
                }
                if (rs.next()) throw new StepFailed("types: more than 3 rows");
            }
        }
    }

    static void types() throws Exception {
        insertTypes(conn, 0);
        sync();
        checkTypes(conn, 0);
        String[][] numerics = {{"1E+20", "100000000000000000000"}, {"-0.000001", "-0.000001"}, {"0.00", "0.00"},
                               {"-1.5E-10", "-0.00000000015"}};
        for (String[] n : numerics) {
            expect(rows(conn, "SELECT ?::numeric, (?::numeric)::text", new BigDecimal(n[0]), new BigDecimal(n[0])),
                    List.of(row(new BigDecimal(n[1]), n[1])), "numeric " + n[0]);
        }
    }

    static void binary() throws Exception {
        // prepareThreshold=-1: named statements and binary transfer from the first execution.
        try (Connection c = DriverManager.getConnection(url + "&prepareThreshold=-1&binaryTransfer=true")) {
            insertTypes(c, 10);
            if (sluice) c.createStatement().execute("FLUSH");
            checkTypes(c, 10);
            checkTypes(c, 0);
        }
    }

    static void jsonb() throws Exception {
        expect(rows(conn, "SELECT j::text, j->'c'->>'d', j @> '{\"a\": 1}', jsonb_typeof(j->'b') FROM types WHERE id = 1"),
                List.of(row("{\"a\": 1, \"b\": [true, null, \"x\"], \"c\": {\"d\": \"é\"}}", "é", true, "array")), "jsonb");
    }

    static void errors() throws Exception {
        String[][] cases = {
            {"SELECT * FROM no_such_table", "42P01"},
            {"SELECT no_such_column FROM items", "42703"},
            {"INSERT INTO items (id, name) VALUES (1, 'again')", "23505"},
            {"SELEC 1", "42601"},
            {"SELECT qty / 0 FROM items WHERE id = 1", "22012"},
        };
        for (String[] c : cases) {
            expectState(() -> exec(c[0]), c[1], c[0]);
            expectState(() -> rows(conn, c[0]), c[1], c[0] + " (prepared)");
        }
        expect(rows(conn, "SELECT 1"), List.of(row(1)), "the session after errors");
    }

    static void failedTx() throws Exception {
        conn.setAutoCommit(false);
        expectState(() -> exec("SELECT * FROM no_such_table"), "42P01", "error in a block");
        expect(conn.unwrap(BaseConnection.class).getTransactionState(), TransactionState.FAILED, "transaction state");
        expectState(() -> exec("SELECT 1"), "25P02", "statement after the error");
        conn.rollback();
        expect(rows(conn, "SELECT 1"), List.of(row(1)), "after ROLLBACK");
        conn.commit();
        conn.setAutoCommit(true);
    }

    static void metadata() throws Exception {
        DatabaseMetaData md = conn.getMetaData();
        List<List<Object>> got = new ArrayList<>();
        try (ResultSet rs = md.getTables(null, "public", "%", new String[] {"TABLE", "VIEW", "MATERIALIZED VIEW"})) {
            while (rs.next()) got.add(row(rs.getString("TABLE_NAME"), rs.getString("TABLE_TYPE")));
        }
        got.sort(Comparator.comparing(r -> (String) r.get(0)));
        expect(got, List.of(row("items", "TABLE"), row("items_summary", sluice ? "MATERIALIZED VIEW" : "VIEW"),
                row("notes", "TABLE"), row("types", "TABLE")), "getTables");
        got.clear();
        try (ResultSet rs = md.getColumns(null, "public", "items", "%")) {
            while (rs.next()) {
                got.add(row(rs.getString("COLUMN_NAME"), rs.getInt("DATA_TYPE"), rs.getString("TYPE_NAME"),
                        rs.getInt("COLUMN_SIZE"), rs.getInt("DECIMAL_DIGITS"), rs.getInt("NULLABLE"),
                        rs.getInt("ORDINAL_POSITION"), rs.getString("IS_NULLABLE")));
            }
        }
        expect(got, List.of(
                row("id", Types.BIGINT, "int8", 19, 0, DatabaseMetaData.columnNoNulls, 1, "NO"),
                row("name", Types.VARCHAR, "text", Integer.MAX_VALUE, 0, DatabaseMetaData.columnNoNulls, 2, "NO"),
                row("qty", Types.INTEGER, "int4", 10, 0, DatabaseMetaData.columnNullable, 3, "YES"),
                row("price", Types.NUMERIC, "numeric", 10, 2, DatabaseMetaData.columnNullable, 4, "YES")), "getColumns(items)");
        got.clear();
        try (ResultSet rs = md.getColumns(null, "public", "types", "%")) {
            while (rs.next()) got.add(row(rs.getString("COLUMN_NAME"), rs.getString("TYPE_NAME")));
        }
        expect(got, List.of(row("id", "int4"), row("b", "bool"), row("i2", "int2"), row("i4", "int4"), row("i8", "int8"),
                row("f4", "float4"), row("f8", "float8"), row("n", "numeric"), row("t", "text"), row("vc", "varchar"),
                row("bt", "bytea"), row("d", "date"), row("tm", "time"), row("ts", "timestamp"), row("tz", "timestamptz"),
                row("iv", "interval"), row("j", "jsonb"), row("ta", "_text")), "getColumns(types)");
        got.clear();
        try (ResultSet rs = md.getPrimaryKeys(null, "public", "items")) {
            while (rs.next()) got.add(row(rs.getString("COLUMN_NAME"), rs.getInt("KEY_SEQ"), rs.getString("PK_NAME")));
        }
        expect(got, List.of(row("id", 1, "items_pkey")), "getPrimaryKeys(items)");
        // Indexes of every kind (on Sluice a plain index is recorded, not
        // built: a NOTICE says so), and no foreign keys.
        exec("CREATE TABLE tags (id int, a text, b int, c int, PRIMARY KEY (b, id), UNIQUE (a, c))");
        exec("CREATE UNIQUE INDEX tags_c_key ON tags (c)");
        exec("CREATE INDEX tags_a_b_idx ON tags (a, b)");
        got.clear();
        try (ResultSet rs = md.getPrimaryKeys(null, "public", "tags")) {
            while (rs.next()) got.add(row(rs.getString("COLUMN_NAME"), rs.getInt("KEY_SEQ"), rs.getString("PK_NAME")));
        }
        expect(got, List.of(row("b", 1, "tags_pkey"), row("id", 2, "tags_pkey")), "getPrimaryKeys(tags)");
        got.clear();
        try (ResultSet rs = md.getIndexInfo(null, "public", "tags", false, false)) {
            while (rs.next()) {
                got.add(row(rs.getString("TABLE_NAME"), rs.getBoolean("NON_UNIQUE"), rs.getString("INDEX_NAME"),
                        rs.getInt("TYPE"), rs.getInt("ORDINAL_POSITION"), rs.getString("COLUMN_NAME"), rs.getString("ASC_OR_DESC")));
            }
        }
        expect(got, List.of(
                row("tags", false, "tags_a_c_key", 3, 1, "a", "A"), row("tags", false, "tags_a_c_key", 3, 2, "c", "A"),
                row("tags", false, "tags_c_key", 3, 1, "c", "A"),
                row("tags", false, "tags_pkey", 3, 1, "b", "A"), row("tags", false, "tags_pkey", 3, 2, "id", "A"),
                row("tags", true, "tags_a_b_idx", 3, 1, "a", "A"), row("tags", true, "tags_a_b_idx", 3, 2, "b", "A")),
                "getIndexInfo(tags)");
        got.clear();
        try (ResultSet rs = md.getIndexInfo(null, "public", "tags", true, false)) {
            while (rs.next()) got.add(row(rs.getString("INDEX_NAME"), rs.getString("COLUMN_NAME")));
        }
        expect(got, List.of(row("tags_a_c_key", "a"), row("tags_a_c_key", "c"), row("tags_c_key", "c"),
                row("tags_pkey", "b"), row("tags_pkey", "id")), "getIndexInfo(tags, unique)");
        for (String table : new String[] {"items", "tags"}) {
            try (ResultSet rs = md.getImportedKeys(null, "public", table)) {
                if (rs.next()) throw new StepFailed("getImportedKeys(" + table + "): a foreign key " + rs.getString("FK_NAME"));
            }
            try (ResultSet rs = md.getExportedKeys(null, "public", table)) {
                if (rs.next()) throw new StepFailed("getExportedKeys(" + table + "): a foreign key " + rs.getString("FK_NAME"));
            }
        }
    }

    static void setObject() throws Exception {
        PGInterval iv = new PGInterval(1, 2, 3, 4, 5, 6.789);
        try (PreparedStatement ps = conn.prepareStatement("INSERT INTO types (id, j, iv) VALUES (?, ?, ?)")) {
            ps.setInt(1, 40);
            ps.setObject(2, jsonb("{\"k\": [1, 2]}"));
            ps.setObject(3, iv);
            ps.executeUpdate();
        }
        sync();
        try (PreparedStatement ps = conn.prepareStatement("SELECT j, iv, iv::text FROM types WHERE id = ?")) {
            ps.setInt(1, 40);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) throw new StepFailed("no row 40");
                PGobject j = (PGobject) rs.getObject(1);
                expect(j.getType() + " " + j.getValue(), "jsonb {\"k\": [1, 2]}", "jsonb PGobject");
                expect(rs.getObject(2), iv, "PGInterval");
                expect(rs.getString(3), "1 year 2 mons 3 days 04:05:06.789", "interval text");
            }
        }
        // A parameter typed only by its PGobject.
        expect(rows(conn, "SELECT ? IS NOT NULL", jsonb("{\"x\": null}")), List.of(row(true)), "untyped jsonb parameter");
    }
}
