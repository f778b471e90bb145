from models.ae import AE, AE_rf, AE_EGNN, Baseline
from models.gcl import GCL, GCL_rf
