#!/bin/sh
exec sh "$REPO/examples/save/save.sh" full
