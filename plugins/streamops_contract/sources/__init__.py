"""What a source keeps in its offsets, read by the job's source and by the operator's health
probes: fleet_alpha's memory of the files it read (:mod:`.alpha_memory`).
"""
