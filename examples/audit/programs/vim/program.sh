# Vim's :wq on a text file, with vim's own defaults (-u NONE: no vimrc;
# 'writebackup' on, so a backup copy is made next to the file while it
# is written, and 'fsync' on).
NAME="vim (Debian vim)"
ECOSYSTEM=Debian
VERSION=$(dpkg-query -W -f '${Version}' vim 2>/dev/null)
ACTION="vim -u NONE -i NONE -n -es: :%s/version 1/version 2/ then :wq on notes.txt holding \"version 1\""
# Installs the system package when vim is missing (DIR is left empty).
install() { install_deb vim vim; }
SETUP='echo "version 1" > notes.txt'
