// Adds a SCRAM-SHA-512 user through a running broker (infra/lib.sh ensure_scram_user), for Kafka storage formatted
// before the SASL_SCRAM listener existed. Run as a single-file program: java -cp 'kafka-libs/*' AddScramUser.java
// <bootstrap> <user> <password>.
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;

public class AddScramUser {
  public static void main(String[] args) throws Exception {
    Properties props = new Properties();
    props.put("bootstrap.servers", args[0]);
    try (Admin admin = Admin.create(props)) {
      admin
          .alterUserScramCredentials(
              List.of(
                  new UserScramCredentialUpsertion(
                      args[1], new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), args[2])))
          .all()
          .get();
    }
  }
}
