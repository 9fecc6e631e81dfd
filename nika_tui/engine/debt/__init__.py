"""Acting on the memory-debt audit: one audit run that acts (:mod:`.run`), the executors of its
actions (:mod:`.actions`) and the service's periodic scheduler (:mod:`.schedule`)."""
