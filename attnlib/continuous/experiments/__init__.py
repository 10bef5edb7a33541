"""Chapter 07b's experiments: documents, digits, alignment, the cost of reading out.

- ``documents``: span documents and their classifier with 1-D continuous attention
  (the paper's Table 1);
- ``digits``: cluttered digits and their classifier with 2-D continuous attention;
- ``alignment``: a monotone alignment task and its continuous-attention model;
- ``classify``: training and scoring the small classifiers of these experiments;
- ``readout_cost``: the time to read a continuous density out against a discrete one.

Every public name is importable from here.
"""

from .alignment import (
    AlignmentModel,
    AlignmentTask,
    alignment_accuracy,
    alignment_means,
    fit_alignment,
    monotone_alignment,
)
from .classify import accuracy, fit_classifier
from .digits import ClutteredDigits, DigitClassifier, cluttered_digits
from .documents import (
    PAPER_TABLE1,
    TABLE1_ROWS,
    DocumentClassifier,
    SpanDocuments,
    span_documents,
    table1,
)
from .readout_cost import cpu_ms, read_out_times

__all__ = [
    "SpanDocuments",
    "span_documents",
    "DocumentClassifier",
    "PAPER_TABLE1",
    "TABLE1_ROWS",
    "table1",
    "ClutteredDigits",
    "cluttered_digits",
    "DigitClassifier",
    "AlignmentTask",
    "monotone_alignment",
    "AlignmentModel",
    "fit_alignment",
    "alignment_accuracy",
    "alignment_means",
    "accuracy",
    "fit_classifier",
    "cpu_ms",
    "read_out_times",
]
