import java.sql.*;
import java.util.Properties;

// AuthProbe connects with pgjdbc (auth_test.go) and prints "ok <current_user> <ssl>"
// or "err <SQLSTATE> <message>". Arguments: url user password.
public class AuthProbe {
    public static void main(String[] args) {
        Properties p = new Properties();
        p.setProperty("user", args[1]);
        p.setProperty("password", args[2]);
        p.setProperty("connectTimeout", "10");
        try (Connection c = DriverManager.getConnection(args[0], p);
             Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT current_user")) {
            rs.next();
            System.out.println("ok " + rs.getString(1));
        } catch (SQLException e) {
            System.out.println("err " + e.getSQLState() + " " + e.getMessage());
        }
    }
}
