# Appends events to a log with >>, writes a note under a temporary name and
# moves it into place with mv, then syncs everything with sync(1).
#
# Covers: a shell program: >> (O_WRONLY|O_CREAT|O_APPEND, dup2 onto stdout)
# on a non-empty file from init/, > (O_TRUNC) on a new file, mv (coreutils
# renames with renameat2 and RENAME_NOREPLACE), sync(1) (the sync system
# call), a child process per external command (vfork + execve).
echo "start" >> events.log
echo "step 1" >> events.log
printf 'note v1\n' > note.tmp
mv note.tmp note.txt
echo "done" >> events.log
sync
echo saved
