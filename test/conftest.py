"""Test session setup: an isolated DDS domain on this machine for every pytest session.

Must run before anything imports rclpy, so parallel sessions never hear each other.
"""
import os
import sys
from pathlib import Path

if 'ORCA_NAV_TEST_DOMAIN_SET' not in os.environ:
    # 1..100 are valid, port-safe domain ids on Linux; the pid spreads parallel sessions.
    os.environ['ROS_DOMAIN_ID'] = str(os.getpid() % 100 + 1)
    os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    os.environ['ORCA_NAV_TEST_DOMAIN_SET'] = '1'

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / 'shared'
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
