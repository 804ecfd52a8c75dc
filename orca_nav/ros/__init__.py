"""Thin rclpy nodes: parameters -> messages -> arrays -> orca_nav.core -> messages.

One module per node executable, and their helpers: params (declaration and checks), convert
(messages <-> arrays), diagnostics (the one place statuses become messages), robot_topics
(per-robot topics read in batches), offload (work off the executor), lifecycle, node_main,
tf_listener, markers.
"""
