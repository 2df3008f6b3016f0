"""The embedded processes of ``streamops up``: the services, Airflow and its database,
the class archives of the JVMs, the launcher jar.
"""
