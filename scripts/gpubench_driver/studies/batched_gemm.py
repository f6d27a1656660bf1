"""The batched_gemm study's plug-in: many small FP32 GEMMs per call (cuBLAS batched, strided, as a graph, as
a loop of calls; the CPU's). Findings, sections and plots are every batch study's (lib/batch_study.py,
lib/batch_report.py); its BatchStudy says what an item is, its operands' size, the loop it is set against."""
from gpubench_driver.lib import batch_report
from gpubench_driver.lib.batch_study import BatchStudy
from gpubench_driver.lib.registry import item_rates

BATCHED_GEMM = BatchStudy(
    title="Batched GEMM", unit="products", item="product", size_name="n",
    batch_meaning="products of n x n FP32 matrices per call",
    operands="3 n x n FP32 matrices", operand_bytes=lambda n: 3 * 4 * n * n,  # A, B and C
    loop_baseline="cublas_loop", against_loop=("cublas_strided", "cublas_graph"))

# Its crossovers lie along the batch, which its batches sweep in doublings.
STUDY = batch_report.study_record("batched_gemm", BATCHED_GEMM, roofline_marker="^",
                                  rates=item_rates("products", with_flop=True), position=30)
