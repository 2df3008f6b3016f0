-- Airflow's metadata database beside the fleet store (run once, on an empty data volume).
CREATE DATABASE airflow OWNER streamops;
