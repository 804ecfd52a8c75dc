"""The fleet as RViz markers (`/orca_nav/markers`): per commanded robot a disc (a sphere of its
radius at its altitude for a drone; blue, or red while its odometry is stale), its ORCA
velocity as an arrow, its goal (at the goal's altitude for a drone), and optionally its ORCA
half-plane lines drawn in velocity space around the robot like the arrow (the arrow's tip lies
left of every line when the robot's linear program was feasible). And a map's traffic rules
(`traffic_rule_markers`): each one-way lane an arrow from its start to its end inside its
outline, each one-robot zone its closed outline."""
from __future__ import annotations

from typing import List

import numpy as np
from geometry_msgs.msg import Point
from visualization_msgs.msg import Marker, MarkerArray

from orca_nav.core.fleet.controller import FleetView
from orca_nav.core.traffic_rules import TrafficRules

DISC, ARROW, GOAL, LINES = range(4)     # marker ids within a robot's namespace


def fleet_markers(view: FleetView, names: List[str], frame: str, stamp,
                  draw_lines: bool) -> MarkerArray:
    out = MarkerArray()
    for i in np.flatnonzero(view.commanded & np.isfinite(view.positions[:, 0])):
        robot = names[i]
        x, y = (float(v) for v in view.positions[i])
        z = float(view.altitudes[i])
        flying = bool(view.flying[i])
        disc = _marker(robot, DISC, Marker.SPHERE if flying else Marker.CYLINDER, frame, stamp)
        disc.pose.position.x, disc.pose.position.y, disc.pose.position.z = x, y, z
        disc.scale.x = disc.scale.y = 2.0 * float(view.radii[i])
        disc.scale.z = 2.0 * float(view.radii[i]) if flying else 0.1
        disc.color.r, disc.color.g, disc.color.b, disc.color.a = \
            (1.0, 0.3, 0.1, 0.8) if view.stale[i] else (0.2, 0.5, 1.0, 0.6)
        arrow = _marker(robot, ARROW, Marker.ARROW, frame, stamp)
        vx, vy = (float(v) for v in view.velocities[i])
        arrow.points = [Point(x=x, y=y, z=z + 0.1), Point(x=x + vx, y=y + vy, z=z + 0.1)]
        arrow.scale.x, arrow.scale.y, arrow.scale.z = 0.05, 0.1, 0.1
        arrow.color.g, arrow.color.a = 0.9, 1.0
        goal = _marker(robot, GOAL, Marker.SPHERE, frame, stamp)
        if np.isfinite(view.goals[i, 0]):
            goal.pose.position.x, goal.pose.position.y = (float(v) for v in view.goals[i])
            goal.pose.position.z = float(view.goal_altitudes[i]) if flying else 0.0
            goal.scale.x = goal.scale.y = goal.scale.z = 0.2
            goal.color.r, goal.color.g, goal.color.a = 1.0, 0.8, 1.0
        else:
            goal.action = Marker.DELETE
        out.markers.extend([disc, arrow, goal])
    if draw_lines and view.lines is not None:
        out.markers.extend(_orca_line_markers(view, names, frame, stamp))
    return out


def _orca_line_markers(view: FleetView, names: List[str], frame: str, stamp) -> List[Marker]:
    rows, lines = view.lines
    markers = []
    for column, i in enumerate(rows):
        if not view.commanded[i]:
            continue
        ends = lines.segments(column, half_length=float(view.max_speed[i])) + view.positions[i]
        marker = _marker(names[i], LINES, Marker.LINE_LIST, frame, stamp)
        marker.points = [Point(x=float(x), y=float(y), z=0.1) for x, y in ends.reshape(-1, 2)]
        marker.scale.x = 0.02
        marker.color.r, marker.color.g, marker.color.b, marker.color.a = 1.0, 0.5, 0.0, 0.9
        marker.lifetime.sec = 1     # gone soon after publish_orca_lines is switched off
        markers.append(marker)
    return markers


def traffic_rule_markers(rules: TrafficRules, stamp) -> MarkerArray:
    """Lanes (namespace 'lanes': green arrows, 'lane_outlines') and zones ('zones': orange
    closed line strips, 5 cm above the map) in the rules' frame."""
    out = MarkerArray()
    z = 0.05
    for k, lane in enumerate(rules.lanes):
        arrow = _marker('lanes', k, Marker.ARROW, rules.frame_id, stamp)
        arrow.points = [Point(x=lane.start[0], y=lane.start[1], z=z),
                        Point(x=lane.end[0], y=lane.end[1], z=z)]
        head = min(0.5 * lane.width, 0.5 * lane.length)
        arrow.scale.x, arrow.scale.y, arrow.scale.z = 0.2 * head, head, head
        arrow.color.g, arrow.color.b, arrow.color.a = 0.8, 0.3, 0.8
        outline = _marker('lane_outlines', k, Marker.LINE_STRIP, rules.frame_id, stamp)
        corners = lane.corners
        outline.points = [Point(x=float(x), y=float(y), z=z)
                          for x, y in np.vstack([corners, corners[:1]])]
        outline.scale.x = 0.03
        outline.color.g, outline.color.b, outline.color.a = 0.8, 0.3, 0.5
        out.markers.extend([arrow, outline])
    for k, zone in enumerate(rules.zones):
        strip = _marker('zones', k, Marker.LINE_STRIP, rules.frame_id, stamp)
        strip.points = [Point(x=x, y=y, z=z) for x, y in zone.polygon + zone.polygon[:1]]
        strip.scale.x = 0.05
        strip.color.r, strip.color.g, strip.color.a = 1.0, 0.5, 0.9
        out.markers.append(strip)
    return out


def _marker(ns: str, marker_id: int, kind: int, frame: str, stamp) -> Marker:
    m = Marker()
    m.header.frame_id, m.header.stamp = frame, stamp
    m.ns, m.id, m.type, m.action = ns, marker_id, kind, Marker.ADD
    m.pose.orientation.w = 1.0
    return m
