"""The catalog layer: finding claims (:mod:`.registry`: the paper folders of ``theorems/`` and users' files),
parsing and validating what a run is asked for (:mod:`.inputs`, shared by the API, the command line and the
pytest plugin) and running many claims (:mod:`.parallel`: Dask tasks).  It sits above the catalog
(``theorems/``) and below the tools and the front ends."""
