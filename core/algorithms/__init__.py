"""Advantage estimators and policy-gradient objectives, one file each, papers cited."""
