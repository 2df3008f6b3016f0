package streamops.udf;

import org.apache.spark.sql.api.java.UDF1;

/**
 * Classpath jar release r1: a Java UDF the fleet job calls to show which release it runs.
 * Registered by the job as {@code streamops_release(vin)}; returns this jar's release tag.
 */
public class Release implements UDF1<String, String> {
    public static final String NAME = "r1";

    @Override
    public String call(String vin) {
        return NAME;
    }
}
