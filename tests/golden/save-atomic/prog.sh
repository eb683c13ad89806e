# Atomic replace with every sync: temp file, fsync, rename, fsync the directory.
printf 'version 2\n' > doc.txt.tmp
sync doc.txt.tmp
mv doc.txt.tmp doc.txt
sync .
echo saved
