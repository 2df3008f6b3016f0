package streamops.udf;

import org.apache.spark.sql.api.java.UDF1;

/**
 * Classpath jar release r2: same UDF as r1, a new release tag. The fleet job's status
 * ({@code classpath_release}) and its {@code job_releases} table show the switch.
 */
public class Release implements UDF1<String, String> {
    public static final String NAME = "r2";

    @Override
    public String call(String vin) {
        return NAME;
    }
}
