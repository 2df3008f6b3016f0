"""Spark-side code: the job runtime, sources, sinks and the jobs themselves."""
