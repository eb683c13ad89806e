# Vim's :wq on a text file, vim started as users start it: the system's
# vimrc and defaults.vim ('nocompatible', so 'backupcopy=auto': the file
# is renamed to its backup while the new one is written; 'writebackup'
# and 'fsync' on; a swap file and viminfo).
NAME="vim (Debian vim)"
ECOSYSTEM=Debian
VERSION=$(deb_version vim)
ACTION="vim with the system's startup files: :%s/version 1/version 2/ then :wq on notes.txt holding \"version 1\""
# Installs the system package when vim is missing (DIR is left empty).
install() { install_deb vim vim; }
SETUP='echo "version 1" > notes.txt'
# What the program promises, in its own documentation at this release.
PROMISE=durable
PROMISE_QUOTE='When on, the library function fsync() will be called after writing a file. This will flush a file to disk, ensuring that it is safely written even on filesystems which do metadata-only journaling. … Be warned that turning this off increases the chances of data loss after a crash.'
PROMISE_LINK='https://github.com/vim/vim/blob/v9.0.1378/runtime/doc/options.txt#L3755'
