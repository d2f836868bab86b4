"""ECG-R1: protocol-guided, modality-agnostic ECG interpretation (arXiv 2602.04279).

Jin et al., ICML 2026. Official code: https://github.com/PKUDigitalHealth/ECG-R1 (protocol thresholds
from ``scripts/corpus_generation/sft_corpus_generation_prompt.txt``, rewards from ``ecg_r1/plugin.py``,
IMD from ``ecg_r1/register.py``; read through the public code index).
"""

from .corpus import Corpus, beat_features, make_corpus
from .evaluate import cross_modal_agreement, evaluate_reports
from .imd import InterleavedModalityDropout, RandomModalityDropout
from .measure import diagnose, measure, neurokit_heart_rate, read_wfdb, validate_record
from .model import ECGR1Tiny, generate_reports, train_model
from .protocol import (
    LABELS,
    LEADS,
    ECGProtocol,
    Measurements,
    axis_quadrant,
    interpret,
    qtc_bazett,
    qtc_fridericia,
)
from .quality import SignalQuality, UnreadableECG, check_quality
from .render import plot_ecg12, render_ecg_image
from .reports import (
    label_conditioned_report,
    numeric_errors,
    parse_numbers,
    protocol_report,
    render_report,
)
from .rewards import diagnosis_accuracy_reward, format_reward, key_evidence_reward
from .simulate import ECGParams, sample_params, simulate_ecg

PAPER = {"title": "ECG-R1: Protocol-Guided and Modality-Agnostic MLLM for Reliable ECG Interpretation",
         "arxiv": "2602.04279", "code": "https://github.com/PKUDigitalHealth/ECG-R1"}

__all__ = [
    "LABELS", "LEADS", "PAPER", "Corpus", "ECGParams", "ECGProtocol", "ECGR1Tiny", "InterleavedModalityDropout",
    "Measurements", "RandomModalityDropout", "SignalQuality", "UnreadableECG", "axis_quadrant", "beat_features",
    "check_quality", "cross_modal_agreement", "diagnose",
    "diagnosis_accuracy_reward", "evaluate_reports", "format_reward", "generate_reports", "interpret",
    "key_evidence_reward", "label_conditioned_report", "make_corpus", "measure", "neurokit_heart_rate",
    "numeric_errors", "parse_numbers", "plot_ecg12", "protocol_report", "qtc_bazett", "qtc_fridericia",
    "read_wfdb", "render_ecg_image", "render_report", "sample_params", "simulate_ecg", "train_model",
    "validate_record",
]
