"""Device profiles: the tuned configurations of a device, stored, shared and validated."""

from .profile import CudaEntry, HybridEntry, Predictor, Profile, Ranked, Sample, SizeClassEntry
from .store import (
    ProfileWarning,
    bundled,
    current_until,
    own_profile,
    path_for,
    profile_at,
    profile_for,
    profile_origin,
    read,
    save,
    still_current,
    thresholds_for,
    trying,
    user_profiles,
)
from .thresholds import Thresholds

__all__ = ["CudaEntry", "HybridEntry", "Predictor", "Profile", "ProfileWarning", "Ranked", "Sample", "SizeClassEntry",
           "Thresholds", "bundled", "current_until", "own_profile", "path_for", "profile_at", "profile_for",
           "profile_origin", "read", "save", "still_current", "thresholds_for", "trying", "user_profiles"]
