"""Health: observe everything first (``gather``), then judge without I/O (``checks``,
``verdict``), then report (``report``).
"""
