"""Health: observe everything first (``gather``), then judge without I/O (``checks``),
then report (``report``). The verdict on a starting driver that every wait asks
(:mod:`streamops.verdict`) lives below the job registry, which waits with it.
"""
