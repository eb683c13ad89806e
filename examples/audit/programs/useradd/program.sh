# shadow's useradd --prefix: adds a user to the passwd, shadow, group and
# gshadow files of a tree (--root would chroot: workload.sh), each rewritten through
# NAME+ renamed over NAME, with NAME- kept as the previous copy.
NAME="shadow useradd --prefix"
ECOSYSTEM=Debian
VERSION=$(deb_version passwd)
ACTION="useradd --prefix \$PWD/root alice on a tree holding root (login.defs and default/useradd from the system)"
# Installs the system package (passwd) when useradd is missing (DIR is
# left empty).
install() { install_deb useradd passwd; }
# A minimal tree: root in passwd and shadow, root and users in group and
# gshadow, and the system's login.defs (USERGROUPS_ENAB: alice gets her
# own group) and default/useradd.
SETUP='mkdir -p root/etc/default
printf "root:x:0:0:root:/root:/bin/sh\n" >root/etc/passwd
printf "root:*:19000:0:99999:7:::\n" >root/etc/shadow
printf "root:x:0:\nusers:x:100:\n" >root/etc/group
printf "root:*::\nusers:*::\n" >root/etc/gshadow
chmod 640 root/etc/shadow root/etc/gshadow
cp /etc/login.defs root/etc/login.defs
cp /etc/default/useradd root/etc/default/useradd'
# What the program promises, in its own documentation at this release.
PROMISE=silent
PROMISE_QUOTE=''
PROMISE_LINK='https://manpages.debian.org/bookworm/passwd/useradd.8.en.html'
PROMISE_NOTE='useradd(8) of shadow 4.13 as Debian ships it (passwd 1:4.13+dfsg1-1+deb12u2) and /usr/share/doc/passwd: no statement about syncing or crash safety of the passwd, shadow, group and gshadow rewrites'
