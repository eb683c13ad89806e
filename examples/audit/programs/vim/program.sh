# Vim's :wq on a text file, vim started as users start it: the system's
# vimrc and defaults.vim ('nocompatible', so 'backupcopy=auto': the file
# is renamed to its backup while the new one is written; 'writebackup'
# and 'fsync' on; a swap file and viminfo).
NAME="vim (Debian vim)"
ECOSYSTEM=Debian
VERSION=$(dpkg-query -W -f '${Version}' vim 2>/dev/null)
ACTION="vim with the system's startup files: :%s/version 1/version 2/ then :wq on notes.txt holding \"version 1\""
# Installs the system package when vim is missing (DIR is left empty).
install() { install_deb vim vim; }
SETUP='echo "version 1" > notes.txt'
