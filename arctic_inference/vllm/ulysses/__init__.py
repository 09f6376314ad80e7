"""Arctic Ulysses sequence parallelism and shift parallelism.

Ulysses splits the tokens of a step across the ``SP`` ranks of a group for
every layer but attention, and around attention swaps to a split by heads with
two all-to-alls, so each rank attends over the whole sequence for
``heads / (SP x TP)`` heads. Shift parallelism keeps a second layout of the
same world, plain tensor parallelism over ``SP x TP`` ranks ("folded TP"), for
small decode steps where the all-to-alls cost more than they save, and picks
one layout per engine step from the number of scheduled tokens.

Modules, each with one job:

* :mod:`.sp_args` -- the engine options (no vLLM import);
* :mod:`.layout` -- rank coordinates and process groups (pure);
* :mod:`.heads` -- which heads each rank holds, and the divisibility rules;
* :mod:`.validate` -- refusing unsupported configurations before GPU work;
* :mod:`.all_to_all` -- the sequence <-> head exchange around attention;
* :mod:`.shift` -- the per-step mode choice (from the padded batch, the
  CUDA-graph key), the weight-shard bookkeeping of both layouts and the graph
  sizes of the SP layout;
* :mod:`.folded_layers` -- each vLLM TP layer's folded layout, as views of its
  TP shard;
* :mod:`.folded_model` -- both layouts of a loaded model, switched per step;
* :mod:`.token_split`, :mod:`.model_split` -- the SP layout's token split, and
  its place in the model's forward (so CUDA graphs capture it);
* :mod:`.step_layout` -- installing the layout of each step and each graph
  capture once vLLM has padded the batch;
* :mod:`.engine_patches`, :mod:`.worker_patches` -- the vLLM patches that wire
  it in (only when SP > 1).
"""
