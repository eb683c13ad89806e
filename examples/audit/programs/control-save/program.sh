# Control: the correct save recipe (write a temporary file, fsync it,
# rename it over the document, fsync the directory): must pass everywhere.
NAME="control: the save recipe"
ECOSYSTEM=control
VERSION="examples/save full"
ACTION="save.sh full: write, fsync, rename, fsync the directory"
SETUP='echo "version 1" > doc.txt'
CHECK="sh $REPO/examples/save/check.sh"
# What the program promises, in its own documentation at this release.
PROMISE=durable
PROMISE_QUOTE='full (the default) is the careful recipe: write a temporary file, fsync it, rename it over the document, fsync the directory.'
PROMISE_LINK='../examples/save/save.sh'
