#!/bin/sh
exec sh "$REPO/examples/sqlite/workload.sh" DELETE EXTRA 4
