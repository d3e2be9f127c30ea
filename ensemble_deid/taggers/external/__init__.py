"""External systems: the ``ExternalTagger`` base (tools run as they are, their
labels mapped onto i2b2 categories), the file formats of PhysioNet deid and
MIST (MAT), and ``benchmark``, which scores the offline systems.
"""
