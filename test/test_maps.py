"""bringup/maps.py: a fleet's maps are read once per process, and again once they change."""
import numpy as np

from orca_nav.bringup import maps
from orca_nav.bringup.demo import load_scenario
from orca_nav.bringup.graph import describe_graph
from orca_nav.core.grid import OccupancyGrid
from orca_nav.core.voxel_map import save_voxel_map


def test_a_map_is_read_again_only_when_its_files_change(tmp_path):
    occupied = np.zeros((3, 4, 5), dtype=bool)
    path, npz = save_voxel_map(OccupancyGrid(occupied, 0.5, (0.0, 0.0, 0.0)), tmp_path / 'box')
    first = maps.load_map_3d(path)
    assert maps.load_map_3d(str(path)) is first
    occupied[1, 2, 3] = True
    save_voxel_map(OccupancyGrid(occupied, 0.5, (0.0, 0.0, 0.0)), tmp_path / 'box')
    again = maps.load_map_3d(path)
    assert again is not first and again.occupied[1, 2, 3]


def test_a_drone_fleet_reads_its_voxel_map_once_from_scenario_to_graph(monkeypatch):
    loads = []
    real = OccupancyGrid.from_npz.__func__
    monkeypatch.setattr(OccupancyGrid, 'from_npz',
                        classmethod(lambda cls, path: loads.append(path) or real(cls, path)))
    maps._load.cache_clear()
    cfg = load_scenario('drones', 2)        # places the drones, then checks the fleet file
    describe_graph(cfg, use_sim=True, rviz=True)    # the voxel size for orca_node and RViz
    assert maps.load_map_3d(cfg.map_3d_path) is maps.load_map_3d(cfg.map_3d_path)
    assert len(loads) == 1
