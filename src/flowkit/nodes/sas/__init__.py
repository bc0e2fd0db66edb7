"""Nodes of the robot-flow (sas) workflow, one concept per module."""
