# `make soak`: kill -9 and SIGINT/SIGTERM trials on a tiny model (test/soak/soak.sh; not part of
# `make test`). SOAK_KILL / SOAK_SIG set the trial counts (200 / 50). Figures: docs/RELIABILITY.md.
SOAK_KILL ?= 200
SOAK_SIG ?= 50
.PHONY: soak
soak: $(CLI)
	SOAK_KILL=$(SOAK_KILL) SOAK_SIG=$(SOAK_SIG) TANDEM=$(BUILD)/tandem nice bash test/soak/soak.sh
