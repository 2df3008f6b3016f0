"""streamops: operations for long-running Spark Structured Streaming jobs."""
