#!/usr/bin/env bash
# Installs SQLAlchemy 2 for the client matrix (TestClientSQLAlchemy2) without
# touching the system's Python: Debian 12 ships SQLAlchemy 1.4, so this takes
# python3-sqlalchemy 2.0 and the python3-typing-extensions it needs (>= 4.6)
# from Debian 13 (trixie), both architecture-independent, and unpacks them
# into a cache directory that the test puts on PYTHONPATH.
#
# apt-get does the fetching, with its own state under the cache directory
# (the machine's sources and package lists are left alone): it checks the
# trixie Release file's signature with the Debian archive keyring and each
# .deb's SHA256 against the signed Packages index. Prints the directory to
# put on PYTHONPATH. Does nothing when SQLAlchemy 2 is already there.
#
# Usage: scripts/install-sqlalchemy2.sh [CACHE_DIR]
#   CACHE_DIR defaults to ${SLUICE_CLIENT_CACHE:-$HOME/.cache/sluice-clients}/sqlalchemy2
set -euo pipefail

dir=${1:-${SLUICE_CLIENT_CACHE:-$HOME/.cache/sluice-clients}/sqlalchemy2}
site=$dir/root/usr/lib/python3/dist-packages
python=/usr/bin/python3

if PYTHONPATH=$site $python -c 'import sqlalchemy, sys; sys.exit(0 if sqlalchemy.__version__.startswith("2.") else 1)' 2>/dev/null; then
  echo "$site"
  exit 0
fi

apt=$dir/apt
mkdir -p "$apt/etc" "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/debs"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main" \
  >"$apt/etc/sources.list"
opts=(-q -o "Dir::Etc::SourceList=$apt/etc/sources.list" -o Dir::Etc::SourceParts=/dev/null
  -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache" -o Acquire::Languages=none
  -o APT::Sandbox::User=root)
apt-get "${opts[@]}" update >&2
# apt-get download verifies each file against the Packages index's SHA256
# before it keeps it.
(cd "$apt/debs" && rm -f ./*.deb && apt-get "${opts[@]}" download python3-sqlalchemy python3-typing-extensions >&2)

rm -rf "$dir/root.new"
mkdir -p "$dir/root.new"
for deb in "$apt/debs"/*.deb; do
  dpkg-deb -x "$deb" "$dir/root.new"
done
rm -rf "$dir/root"
mv "$dir/root.new" "$dir/root"
rm -rf "$apt/lists" "$apt/cache"

PYTHONPATH=$site $python -c 'import sqlalchemy, sys; print("SQLAlchemy", sqlalchemy.__version__, file=sys.stderr)' >&2
echo "$site"
