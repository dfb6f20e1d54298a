#!/bin/sh
# A sample project's own script: what it can and cannot reach from inside.
echo "hello from $(pwd) as uid $(id -u)"
if echo "written inside the sandbox" 2>/dev/null > made-in-sandbox.txt; then echo "wrote made-in-sandbox.txt"; else echo "cannot write here as uid $(id -u)"; fi
if cat /etc/shadow >/dev/null 2>&1; then echo "read /etc/shadow"; else echo "cannot read /etc/shadow"; fi
if [ -e "$HOME" ]; then echo "HOME is visible"; else echo "HOME ($HOME) is not in the sandbox"; fi
