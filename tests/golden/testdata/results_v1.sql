PRAGMA foreign_keys=OFF;
BEGIN TRANSACTION;
CREATE TABLE suites (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  definition TEXT NOT NULL,
  started_at TEXT NOT NULL,
  finished_at TEXT,
  git_revision TEXT NOT NULL,
  host_facts TEXT NOT NULL CHECK (json_valid(host_facts)),
  environment TEXT NOT NULL CHECK (json_valid(environment)),
  command_line TEXT NOT NULL
);
INSERT INTO suites VALUES(1,'golden',replace('# Golden inputs for the refactoring test: every table gets rows.\nname = "golden"\ndescription = "tiny model: ok, skipped, failed and validation cases"\nrepetitions = 1\ntimeout_s = 120\n\n[base]\nmodel = "tiny"\ndata = "builtin:stories"\nbatch = 4\nblock = 32\nsteps = 4\nwarmup_steps = 1\nthreads = 1\neval_every = 2\n\n[[case]]\nmode = "naive"\nranks = 1\n\n[[case]]\nmode = "sharded"\nranks = 2\nreduce = "overlap"\nbucket_mb = 0.001\n\n[[case]]\nmode = "naive"\nranks = 2\n\n','\n',char(10)),'2026-11-23T00:01:39.398Z','2026-11-23T00:01:41.308Z','d969ece1bd09','{"cores":2,"cpu_model":"AMD EPYC","hostname":"vm","kernel":"Linux 6.18.44-fc-v669 x86_64","memory_total_bytes":25276502016}','{"command_line":"trainscope suite run golden_suite.toml","cores":2,"cpu_model":"AMD EPYC","hostname":"vm","kernel":"Linux 6.18.44-fc-v669 x86_64","mca":{},"memory_total_bytes":25276502016,"openblas_config":"OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY USE_OPENMP Cooperlake MAX_THREADS=64","openblas_threads":2,"openmpi_version":"4.1.4"}','trainscope suite run golden_suite.toml');
INSERT INTO suites VALUES(2,'golden-fail',replace('name = "golden-fail"\ntimeout_s = 120\n[base]\nmodel = "tiny"\nbatch = 4\nblock = 32\nsteps = 12\nthreads = 1\nlr = 1e30\nextra_args = ["--grad-clip", "0"]\n[[case]]\nmode = "naive"\nranks = 1\n','\n',char(10)),'2026-11-23T00:01:41.376Z','2026-11-23T00:01:41.472Z','d969ece1bd09','{"cores":2,"cpu_model":"AMD EPYC","hostname":"vm","kernel":"Linux 6.18.44-fc-v669 x86_64","memory_total_bytes":25276502016}','{"command_line":"trainscope suite run golden_fail_suite.toml","cores":2,"cpu_model":"AMD EPYC","hostname":"vm","kernel":"Linux 6.18.44-fc-v669 x86_64","mca":{},"memory_total_bytes":25276502016,"openblas_config":"OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY USE_OPENMP Cooperlake MAX_THREADS=64","openblas_threads":2,"openmpi_version":"4.1.4"}','trainscope suite run golden_fail_suite.toml');
INSERT INTO suites VALUES(3,'golden-allreduce',replace('name = "golden-allreduce"\nkind = "allreduce"\ntimeout_s = 120\n[base]\nranks = 2\nmin_bytes = 8\nmax_bytes = 4096\nfactor = 8\niters = 3\nwarmup = 1\n[grid]\ntransport = ["shm", "tcp"]\n','\n',char(10)),'2026-11-23T00:01:41.521Z','2026-11-23T00:01:42.585Z','d969ece1bd09','{"cores":2,"cpu_model":"AMD EPYC","hostname":"vm","kernel":"Linux 6.18.44-fc-v669 x86_64","memory_total_bytes":25276502016}','{"command_line":"trainscope suite run golden_allreduce_suite.toml","cores":2,"cpu_model":"AMD EPYC","hostname":"vm","kernel":"Linux 6.18.44-fc-v669 x86_64","mca":{},"memory_total_bytes":25276502016,"openblas_config":"OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY USE_OPENMP Cooperlake MAX_THREADS=64","openblas_threads":2,"openmpi_version":"4.1.4"}','trainscope suite run golden_allreduce_suite.toml');
CREATE TABLE runs (
  id INTEGER PRIMARY KEY,
  suite_id INTEGER NOT NULL REFERENCES suites(id) ON DELETE CASCADE,
  case_name TEXT NOT NULL,
  config TEXT NOT NULL CHECK (json_valid(config)),
  mode TEXT NOT NULL,
  reduction TEXT NOT NULL,
  bucket_mb REAL,
  world_size INTEGER NOT NULL,
  threads INTEGER NOT NULL,
  transport TEXT NOT NULL CHECK (json_valid(transport)),
  links TEXT NOT NULL,
  launcher_command TEXT NOT NULL,
  repetition INTEGER NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('running', 'ok', 'failed', 'skipped')),
  exit_code INTEGER,
  error TEXT NOT NULL DEFAULT '',
  started_at TEXT NOT NULL,
  finished_at TEXT,
  summary_schema TEXT,
  trainscope_version TEXT,
  git_revision TEXT,
  model TEXT CHECK (model IS NULL OR json_valid(model)),
  options TEXT CHECK (options IS NULL OR json_valid(options)),
  summary_world_size INTEGER,
  threads_per_rank INTEGER,
  hosts TEXT CHECK (hosts IS NULL OR json_valid(hosts)),
  summary_transport TEXT CHECK (summary_transport IS NULL OR json_valid(summary_transport)),
  transport_per_rank TEXT CHECK (transport_per_rank IS NULL OR json_valid(transport_per_rank)),
  summary_status TEXT CHECK (summary_status IS NULL OR summary_status IN ('ok', 'failed')),
  summary_error TEXT,
  failed_step INTEGER,
  step_lists INTEGER,
  tokens_per_s REAL,
  step_time_median_s REAL,
  step_time_p95_s REAL
);
INSERT INTO runs VALUES(1,1,'naive-r1-fused-t1','{"batch":4,"block":32,"bucket_mb":null,"data":"builtin:stories","eval_every":2,"extra_args":[],"kind":"train","links":0,"lr":null,"mode":"naive","model":"tiny","name":"naive-r1-fused-t1","ranks":1,"reduce":"fused","shard":"strided","steps":4,"threads":1,"tokenizer":"byte","transport":"auto","warmup_steps":1}','naive','fused',NULL,1,1,'{}','auto','/work/wt-straggler/build/trainscope train --model tiny --mode naive --reduce fused --batch 4 --block 32 --steps 4 --warmup-steps 1 --data builtin:stories --tokenizer byte --eval-every 2 --shard strided --threads 1 --summary /tmp/trainscope-suite-ad2IDF/case-1.json --status-dir /tmp/trainscope-suite-ad2IDF/case-1-status --quiet',0,'ok',0,'','2026-11-23T00:01:39.399Z','2026-11-23T00:01:39.539Z','trainscope.run_summary/1','0.1.0','d969ece1bd09','{"architectures":["LlamaForCausalLM"],"attention_bias":false,"hidden_act":"silu","hidden_size":32,"intermediate_size":64,"max_position_embeddings":64,"mlp_bias":false,"model_type":"llama","num_attention_heads":4,"num_hidden_layers":2,"num_key_value_heads":4,"rms_norm_eps":9.999999747378752e-06,"rope_theta":10000.0,"tie_word_embeddings":false,"torch_dtype":"float32","trainscope":{"default_batch":4,"default_block":32,"preset":"tiny"},"vocab_size":260}','{"adam_eps":1e-08,"batch":4,"beta1":0.9,"beta2":0.999,"block":32,"bucket_mb":32.0,"data":{"batching":"pad","delimiter":"<|endoftext|>","mask_padding":false,"max_record_bytes":67108864,"one_per_line":false,"seed":1234,"shuffle":true,"skip_bad_records":false,"source":"builtin:stories","split":"train","text_field":"text"},"eval_every":2,"grad_clip":1.0,"inject_delay":null,"lr":0.0003,"lr_warmup":0,"min_lr":0.0,"mode":"naive","model":"tiny","reduce":"fused","schedule":"constant","seed":42,"shard":"strided","stall_timeout_s":60.0,"steps":4,"tokenizer":"byte","val_batches":4,"warmup_steps":1,"weight_decay":0.01}',1,1,'["vm"]','{}','[]','ok','',NULL,1,83652.201132273024996,0.0014823279999999999876,0.0052418980000000009109);
INSERT INTO runs VALUES(2,1,'sharded-r2-overlap-b0.001-t1','{"batch":4,"block":32,"bucket_mb":0.001,"data":"builtin:stories","eval_every":2,"extra_args":[],"kind":"train","links":0,"lr":null,"mode":"sharded","model":"tiny","name":"sharded-r2-overlap-b0.001-t1","ranks":2,"reduce":"overlap","shard":"strided","steps":4,"threads":1,"tokenizer":"byte","transport":"auto","warmup_steps":1}','sharded','overlap',0.0010000000000000000208,2,1,'{"btl_tcp_if_include":"lo","oob_tcp_if_include":"lo"}','auto','/usr/bin/mpirun -np 2 --bind-to none --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo /work/wt-straggler/build/trainscope train --model tiny --mode sharded --reduce overlap --bucket-mb 0.001 --batch 4 --block 32 --steps 4 --warmup-steps 1 --data builtin:stories --tokenizer byte --eval-every 2 --shard strided --threads 1 --summary /tmp/trainscope-suite-ad2IDF/case-2.json --status-dir /tmp/trainscope-suite-ad2IDF/case-2-status --quiet',0,'ok',0,'','2026-11-23T00:01:39.545Z','2026-11-23T00:01:41.301Z','trainscope.run_summary/1','0.1.0','d969ece1bd09','{"architectures":["LlamaForCausalLM"],"attention_bias":false,"hidden_act":"silu","hidden_size":32,"intermediate_size":64,"max_position_embeddings":64,"mlp_bias":false,"model_type":"llama","num_attention_heads":4,"num_hidden_layers":2,"num_key_value_heads":4,"rms_norm_eps":9.999999747378752e-06,"rope_theta":10000.0,"tie_word_embeddings":false,"torch_dtype":"float32","trainscope":{"default_batch":4,"default_block":32,"preset":"tiny"},"vocab_size":260}','{"adam_eps":1e-08,"batch":4,"beta1":0.9,"beta2":0.999,"block":32,"bucket_mb":0.001,"data":{"batching":"pad","delimiter":"<|endoftext|>","mask_padding":false,"max_record_bytes":67108864,"one_per_line":false,"seed":1234,"shuffle":true,"skip_bad_records":false,"source":"builtin:stories","split":"train","text_field":"text"},"eval_every":2,"grad_clip":1.0,"inject_delay":null,"lr":0.0003,"lr_warmup":0,"min_lr":0.0,"mode":"sharded","model":"tiny","reduce":"overlap","schedule":"constant","seed":42,"shard":"strided","stall_timeout_s":60.0,"steps":4,"tokenizer":"byte","val_batches":4,"warmup_steps":1,"weight_decay":0.01}',2,1,'["vm"]','{"btl_tcp_if_include":"lo","ess":"pmi","hwloc_base_binding_policy":"none","mpi_oversubscribe":"0","oob_tcp_if_include":"lo"}','[]','ok','',NULL,2,47722.776849834888709,0.002598340000000000198,0.0071115583000000001309);
INSERT INTO runs VALUES(3,1,'naive-r2-fused-t1','{"batch":4,"block":32,"bucket_mb":null,"data":"builtin:stories","eval_every":2,"extra_args":[],"kind":"train","links":0,"lr":null,"mode":"naive","model":"tiny","name":"naive-r2-fused-t1","ranks":2,"reduce":"fused","shard":"strided","skip_reason":"naive runs one process; this case has 2 ranks","steps":4,"threads":1,"tokenizer":"byte","transport":"auto","warmup_steps":1}','naive','fused',NULL,2,1,'{"btl_tcp_if_include":"lo","oob_tcp_if_include":"lo"}','auto','/usr/bin/mpirun -np 2 --bind-to none --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo /work/wt-straggler/build/trainscope train --model tiny --mode naive --reduce fused --batch 4 --block 32 --steps 4 --warmup-steps 1 --data builtin:stories --tokenizer byte --eval-every 2 --shard strided --threads 1 --summary /tmp/trainscope-suite-ad2IDF/case-3.json --status-dir /tmp/trainscope-suite-ad2IDF/case-3-status --quiet',0,'skipped',NULL,'naive runs one process; this case has 2 ranks','2026-11-23T00:01:41.305Z','2026-11-23T00:01:41.305Z',NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL);
INSERT INTO runs VALUES(4,2,'naive-r1-fused-t1','{"batch":4,"block":32,"bucket_mb":null,"data":"builtin:stories","eval_every":0,"extra_args":["--grad-clip","0"],"kind":"train","links":0,"lr":1e+30,"mode":"naive","model":"tiny","name":"naive-r1-fused-t1","ranks":1,"reduce":"fused","shard":"strided","steps":12,"threads":1,"tokenizer":"byte","transport":"auto","warmup_steps":1}','naive','fused',NULL,1,1,'{}','auto','/work/wt-straggler/build/trainscope train --model tiny --mode naive --reduce fused --batch 4 --block 32 --steps 12 --warmup-steps 1 --data builtin:stories --tokenizer byte --eval-every 0 --shard strided --lr 1e+30 --threads 1 --summary /tmp/trainscope-suite-cYV72P/case-1.json --status-dir /tmp/trainscope-suite-cYV72P/case-1-status --quiet --grad-clip 0',0,'failed',1,replace('exit code 1; stderr:\ntrainscope: error: loss is -nan at step 2','\n',char(10)),'2026-11-23T00:01:41.389Z','2026-11-23T00:01:41.469Z','trainscope.run_summary/1','0.1.0','d969ece1bd09','{"architectures":["LlamaForCausalLM"],"attention_bias":false,"hidden_act":"silu","hidden_size":32,"intermediate_size":64,"max_position_embeddings":64,"mlp_bias":false,"model_type":"llama","num_attention_heads":4,"num_hidden_layers":2,"num_key_value_heads":4,"rms_norm_eps":9.999999747378752e-06,"rope_theta":10000.0,"tie_word_embeddings":false,"torch_dtype":"float32","trainscope":{"default_batch":4,"default_block":32,"preset":"tiny"},"vocab_size":260}','{"adam_eps":1e-08,"batch":4,"beta1":0.9,"beta2":0.999,"block":32,"bucket_mb":32.0,"data":{"batching":"pad","delimiter":"<|endoftext|>","mask_padding":false,"max_record_bytes":67108864,"one_per_line":false,"seed":1234,"shuffle":true,"skip_bad_records":false,"source":"builtin:stories","split":"train","text_field":"text"},"eval_every":0,"grad_clip":0.0,"inject_delay":null,"lr":1e+30,"lr_warmup":0,"min_lr":0.0,"mode":"naive","model":"tiny","reduce":"fused","schedule":"constant","seed":42,"shard":"strided","stall_timeout_s":60.0,"steps":12,"tokenizer":"byte","val_batches":4,"warmup_steps":1,"weight_decay":0.01}',1,1,'["vm"]','{}','[]','failed','loss is -nan at step 2',2,1,233288.1494323478255,0.00053153150000000007942,0.00057712145000000003754);
INSERT INTO runs VALUES(5,3,'allreduce-r2-shm','{"kind":"allreduce","links":0,"name":"allreduce-r2-shm","ranks":2,"sweep":{"factor":8,"iters":3,"max_bytes":4096,"min_bytes":8,"warmup":1},"threads":0,"transport":"shm"}','allreduce','',NULL,2,0,'{"btl":"vader,self","btl_tcp_if_include":"lo","oob_tcp_if_include":"lo","pml":"ob1"}','shm','/usr/bin/mpirun -np 2 --bind-to none --mca pml ob1 --mca btl vader,self --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo /work/wt-straggler/build/trainscope allreduce-bench --min-bytes 8 --max-bytes 4096 --factor 8 --iters 3 --warmup 1 --jsonl /tmp/trainscope-suite-vSVW6O/case-1.jsonl',0,'ok',0,'','2026-11-23T00:01:41.533Z','2026-11-23T00:01:42.088Z',NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL);
INSERT INTO runs VALUES(6,3,'allreduce-r2-tcp','{"kind":"allreduce","links":0,"name":"allreduce-r2-tcp","ranks":2,"sweep":{"factor":8,"iters":3,"max_bytes":4096,"min_bytes":8,"warmup":1},"threads":0,"transport":"tcp"}','allreduce','',NULL,2,0,'{"btl":"tcp,self","btl_tcp_if_include":"lo","btl_tcp_links":"1","oob_tcp_if_include":"lo","pml":"ob1"}','1','/usr/bin/mpirun -np 2 --bind-to none --mca pml ob1 --mca btl tcp,self --mca btl_tcp_links 1 --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo /work/wt-straggler/build/trainscope allreduce-bench --min-bytes 8 --max-bytes 4096 --factor 8 --iters 3 --warmup 1 --jsonl /tmp/trainscope-suite-vSVW6O/case-2.jsonl',0,'ok',0,'','2026-11-23T00:01:42.091Z','2026-11-23T00:01:42.582Z',NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL);
CREATE TABLE rank_results (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  rank INTEGER NOT NULL,
  host TEXT NOT NULL,
  pid INTEGER NOT NULL,
  tokens_per_s REAL,
  step_time_mean_s REAL,
  step_time_median_s REAL,
  step_time_p95_s REAL,
  step_time_min_s REAL,
  step_time_max_s REAL,
  tracked_peak_total INTEGER NOT NULL,
  peak_parameters INTEGER NOT NULL,
  peak_gradients INTEGER NOT NULL,
  peak_optimizer_state INTEGER NOT NULL,
  peak_activations INTEGER NOT NULL,
  peak_data INTEGER NOT NULL,
  peak_comm INTEGER NOT NULL,
  peak_workspace INTEGER NOT NULL,
  peak_other INTEGER NOT NULL,
  vm_hwm INTEGER,
  vm_rss INTEGER,
  pss INTEGER,
  data_examples_held INTEGER NOT NULL,
  data_tokens_held INTEGER NOT NULL,
  data_bytes_held INTEGER NOT NULL,
  data_bytes_read INTEGER NOT NULL,
  comm_calls INTEGER NOT NULL,
  comm_bytes INTEGER NOT NULL,
  comm_time_s REAL,
  comm_exposed_s REAL,
  PRIMARY KEY (run_id, rank)
) WITHOUT ROWID;
INSERT INTO rank_results VALUES(1,0,'vm',18607,83652.201132273024996,0.0026403423333333335409,0.0014823279999999999876,0.0052418980000000009109,0.00077907099999999999528,0.0056596280000000007484,5440008,149120,149120,298240,730608,5440008,0,196356,0,15921152,15921152,9871360,20000,640000,2880008,10092471,4,596480,1.873000000000000109e-06,1.873000000000000109e-06);
INSERT INTO rank_results VALUES(2,0,'vm',18679,23861.388424917444354,0.0041233806666666674572,0.002598340000000000198,0.0071115583000000001309,0.00215877499999999993,0.007613027000000000509,2960008,149120,149120,298240,365304,2960008,0,101124,0,24231936,24231936,10138624,10000,320000,1600008,5044983,572,596480,0.94996230500000022889,0.96671857899999991126);
INSERT INTO rank_results VALUES(2,1,'vm',18686,23884.96691739460948,0.0036631946666666670084,0.0025957750000000002522,0.005862302500000000395,0.0021685590000000000247,0.0062252500000000007482,2960008,149120,149120,298240,365304,2960008,0,101124,0,24211456,24211456,10153984,10000,320000,1600008,5047488,572,596480,0.9918570030000003479,0.99743197000000005658);
INSERT INTO rank_results VALUES(4,0,'vm',18920,233288.1494323478255,0.00053153150000000007942,0.00053153150000000007942,0.00057712145000000003754,0.00048087600000000003562,0.00058218700000000006902,5440008,149120,149120,298240,730608,5440008,0,196356,0,16138240,15650816,8229888,20000,640000,2880008,10092471,2,298240,6.8100000000000002319e-07,6.8100000000000002319e-07);
CREATE TABLE rank_phase_stats (
  run_id INTEGER NOT NULL,
  rank INTEGER NOT NULL,
  phase TEXT NOT NULL CHECK (phase IN ('data', 'forward', 'backward', 'comm', 'optimizer', 'eval', 'checkpoint')),
  mean_s REAL,
  median_s REAL,
  p95_s REAL,
  min_s REAL,
  max_s REAL,
  PRIMARY KEY (run_id, rank, phase),
  FOREIGN KEY (run_id, rank) REFERENCES rank_results(run_id, rank) ON DELETE CASCADE
) WITHOUT ROWID;
INSERT INTO rank_phase_stats VALUES(1,0,'backward',0.00033167100000000001658,0.00027548000000000003907,0.00043618129999999999749,0.00026549599999999999372,0.00045403700000000001696);
INSERT INTO rank_phase_stats VALUES(1,0,'checkpoint',0.0,0.0,0.0,0.0,0.0);
INSERT INTO rank_phase_stats VALUES(1,0,'comm',7.1733333333333340392e-07,6.3100000000000007836e-07,1.0180000000000000364e-06,4.600000000000000427e-07,1.0610000000000000907e-06);
INSERT INTO rank_phase_stats VALUES(1,0,'data',3.4620000000000004805e-06,3.2750000000000004075e-06,4.1228000000000005744e-06,2.8940000000000001591e-06,4.217000000000000452e-06);
INSERT INTO rank_phase_stats VALUES(1,0,'eval',0.0019803593333333332701,0.00089060700000000007393,0.0046344845999999996835,0.0,0.0050504709999999999534);
INSERT INTO rank_phase_stats VALUES(1,0,'forward',0.00023155166666666667429,0.0002308640000000000041,0.00023707490000000002285,0.00022602600000000002094,0.00023776500000000002493);
INSERT INTO rank_phase_stats VALUES(1,0,'optimizer',9.178633333333333923e-05,9.1226000000000010536e-05,9.2802799999999998556e-05,9.1155000000000003922e-05,9.2978000000000003248e-05);
INSERT INTO rank_phase_stats VALUES(2,0,'backward',0.00014314633333333334893,0.00014506800000000001442,0.00014781480000000002004,0.00013625100000000002074,0.00014812000000000001163);
INSERT INTO rank_phase_stats VALUES(2,0,'checkpoint',0.0,0.0,0.0,0.0,0.0);
INSERT INTO rank_phase_stats VALUES(2,0,'comm',0.0033936236666666673086,0.0017985170000000001277,0.0061490449999999996846,0.001749917000000000139,0.006632437000000000575);
INSERT INTO rank_phase_stats VALUES(2,0,'data',2.9610000000000001106e-06,2.5240000000000003134e-06,4.3266999999999995879e-06,1.8320000000000002051e-06,4.5270000000000000248e-06);
INSERT INTO rank_phase_stats VALUES(2,0,'eval',0.00033897500000000004016,0.00048906900000000007051,0.00052397730000000000867,0.0,0.00052785600000000004999);
INSERT INTO rank_phase_stats VALUES(2,0,'forward',0.00014950600000000001496,0.00012930300000000001883,0.000192477599999999995,0.00011971800000000000811,0.0001994970000000000044);
INSERT INTO rank_phase_stats VALUES(2,0,'optimizer',9.4490666666666666383e-05,9.2298000000000002974e-05,9.8921999999999999184e-05,9.1516000000000009449e-05,9.9658000000000000273e-05);
INSERT INTO rank_phase_stats VALUES(2,1,'backward',0.00014735266666666667627,0.00014322200000000000533,0.00015695330000000000717,0.00014035699999999999803,0.00015847899999999999834);
INSERT INTO rank_phase_stats VALUES(2,1,'checkpoint',0.0,0.0,0.0,0.0,0.0);
INSERT INTO rank_phase_stats VALUES(2,1,'comm',0.0029408493333333333118,0.0018072220000000000384,0.0049263682000000004815,0.0017423860000000000649,0.0052729400000000002657);
INSERT INTO rank_phase_stats VALUES(2,1,'data',2.7976666666666669294e-06,2.1630000000000002969e-06,4.3715999999999997846e-06,1.6130000000000000572e-06,4.6170000000000000102e-06);
INSERT INTO rank_phase_stats VALUES(2,1,'eval',0.00033949566666666668298,0.00048887799999999999051,0.00052553590000000002455,0.0,0.00052960900000000000423);
INSERT INTO rank_phase_stats VALUES(2,1,'forward',0.00013951766666666666743,0.00012956300000000001973,0.00016245260000000001057,0.00012288300000000000914,0.00016610700000000000052);
INSERT INTO rank_phase_stats VALUES(2,1,'optimizer',9.2304000000000002582e-05,9.2458000000000001451e-05,9.2872000000000001209e-05,9.1535999999999999093e-05,9.2918000000000007202e-05);
INSERT INTO rank_phase_stats VALUES(4,0,'backward',0.00026474400000000002531,0.00026474400000000002531,0.00026626679999999997624,0.00026305200000000000153,0.00026643599999999999488);
INSERT INTO rank_phase_stats VALUES(4,0,'checkpoint',0.0,0.0,0.0,0.0,0.0);
INSERT INTO rank_phase_stats VALUES(4,0,'comm',3.9100000000000004691e-07,3.9100000000000004691e-07,4.0900000000000002278e-07,3.710000000000000266e-07,4.1100000000000001419e-07);
INSERT INTO rank_phase_stats VALUES(4,0,'data',2.1880000000000000576e-06,2.1880000000000000576e-06,2.2015000000000004365e-06,2.1730000000000002013e-06,2.2030000000000003375e-06);
INSERT INTO rank_phase_stats VALUES(4,0,'eval',0.0,0.0,0.0,0.0,0.0);
INSERT INTO rank_phase_stats VALUES(4,0,'forward',0.00021968749999999999346,0.00021968749999999999346,0.00022695185000000002157,0.00021161600000000000136,0.00022775900000000001265);
INSERT INTO rank_phase_stats VALUES(4,0,'optimizer',4.424050000000000443e-05,4.424050000000000443e-05,8.4056950000000008414e-05,0.0,8.8481000000000008861e-05);
CREATE TABLE steps (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  rank INTEGER NOT NULL,
  step INTEGER NOT NULL,
  loss REAL,
  lr REAL,
  grad_norm REAL,
  tokens INTEGER NOT NULL,
  step_time_s REAL,
  data_s REAL,
  forward_s REAL,
  backward_s REAL,
  comm_s REAL,
  optimizer_s REAL,
  eval_s REAL,
  checkpoint_s REAL,
  comm_calls INTEGER NOT NULL,
  comm_bytes INTEGER NOT NULL,
  comm_exposed_s REAL,
  mem_active INTEGER NOT NULL,
  mem_peak INTEGER NOT NULL,
  comm_time_s REAL,
  PRIMARY KEY (run_id, rank, step)
) WITHOUT ROWID;
INSERT INTO steps VALUES(1,0,0,5.5409743520785408321,0.00029999999999999997371,1.4900298110695953113,124,0.00088302499999999995577,0.00013508100000000000315,0.00034365200000000000911,0.00030855900000000002509,1.1110000000000000354e-06,9.2758000000000008743e-05,0.0,0.0,1,149120,6.0100000000000004798e-07,4540452,4540452,6.0100000000000004798e-07);
INSERT INTO steps VALUES(1,0,1,5.5099257163144397253,0.00029999999999999997371,1.3712180607143664712,124,0.0056600490000000003298,2.8940000000000001591e-06,0.00023776500000000002493,0.00027548000000000003907,6.3100000000000007836e-07,9.1226000000000010536e-05,0.0050504709999999999534,0.0,1,149120,3.8099999999999998383e-07,4548452,4548452,3.8099999999999998383e-07);
INSERT INTO steps VALUES(1,0,2,5.4888101812522700484,0.00029999999999999997371,1.4077083243961217018,124,0.00077955099999999996358,4.217000000000000452e-06,0.00022602600000000002094,0.00045403700000000001696,1.0610000000000000907e-06,9.2978000000000003248e-05,0.0,0.0,1,149120,6.0100000000000004798e-07,4548452,4548452,6.0100000000000004798e-07);
INSERT INTO steps VALUES(1,0,3,5.4716229732448740108,0.00029999999999999997371,1.4862818025822188694,124,0.0014823480000000000857,3.2750000000000004075e-06,0.0002308640000000000041,0.00026549599999999999372,4.600000000000000427e-07,9.1155000000000003922e-05,0.00089060700000000007393,0.0,1,149120,2.8999999999999997628e-07,4548452,4548452,2.8999999999999997628e-07);
INSERT INTO steps VALUES(2,0,0,5.5409743520785399439,0.00029999999999999997371,1.490029740481856546,62,1.0056946909999999739,4.1160000000000000635e-06,0.038717477000000000142,0.010284783999999999939,0.95657739900000005039,0.00010764100000000000837,0.0,0.0,143,149120,0.95655034799999993921,2743420,2743420,0.94787602300000028954);
INSERT INTO steps VALUES(2,0,1,5.5099257167561592751,0.00029999999999999997371,1.3712180152787825093,62,0.0076139379999999997825,4.5270000000000000248e-06,0.0001994970000000000044,0.00014812000000000001163,0.006632437000000000575,9.9658000000000000273e-05,0.00052785600000000004999,0.0,143,149120,0.0066254160000000002911,2743420,2743420,0.0016387519999999987461);
INSERT INTO steps VALUES(2,0,2,5.488810177066223872,0.00029999999999999997371,1.4077083085373982562,62,0.002159284999999999937,2.5240000000000003134e-06,0.00011971800000000000811,0.00014506800000000001442,0.0017985170000000001277,9.2298000000000002974e-05,0.0,0.0,143,149120,0.0017953130000000002038,2743420,2743420,0.00020941000000000020578);
INSERT INTO steps VALUES(2,0,3,5.4716229798578153165,0.00029999999999999997371,1.4862818701086504269,62,0.0025983700000000000199,1.8320000000000002051e-06,0.00012930300000000001883,0.00013625100000000002074,0.001749917000000000139,9.1516000000000009449e-05,0.00048906900000000007051,0.0,143,149120,0.0017475019999999999529,2743420,2743420,0.00023812000000000013927);
INSERT INTO steps VALUES(2,1,0,5.5409743520785399439,0.00029999999999999997371,1.490029740481856546,62,1.0071352460000000395,3.7360000000000003136e-06,0.00024409400000000001126,0.00019285800000000001596,1.0065796970000000509,0.0001112550000000000046,0.0,0.0,143,149120,0.98862731800000003268,2743420,2743420,0.9869753090000003004);
INSERT INTO steps VALUES(2,1,1,5.5099257167561592751,0.00029999999999999997371,1.3712180152787825093,62,0.0062255909999999999374,4.6170000000000000102e-06,0.00016610700000000000052,0.00015847899999999999834,0.0052729400000000002657,9.2458000000000001451e-05,0.00052960900000000000423,0.0,143,149120,0.0052660110000000001292,2743420,2743420,0.0037759000000000021712);
INSERT INTO steps VALUES(2,1,2,5.488810177066223872,0.00029999999999999997371,1.4077083085373982562,62,0.0021698210000000001627,1.6130000000000000572e-06,0.00012288300000000000914,0.00014322200000000000533,0.0018072220000000000384,9.2918000000000007202e-05,0.0,0.0,143,149120,0.0018034559999999999393,2743420,2743420,0.00028007700000000032049);
INSERT INTO steps VALUES(2,1,3,5.4716229798578153165,0.00029999999999999997371,1.4862818701086504269,62,0.0025958150000000000147,2.1630000000000002969e-06,0.00012956300000000001973,0.00014035699999999999803,0.0017423860000000000649,9.1535999999999999093e-05,0.00048887799999999999051,0.0,143,149120,0.0017351849999999999826,2743420,2743420,0.00082571700000000000912);
INSERT INTO steps VALUES(4,0,0,5.5409743520785408321,1.0000000000000000198e+30,1.4900298110695953113,124,0.00087076700000000004705,0.00015376899999999999769,0.00033457800000000003466,0.0002897920000000000335,1.0310000000000001662e-06,8.9754000000000008357e-05,0.0,0.0,1,149120,4.5100000000000000184e-07,4404444,4404444,4.5100000000000000184e-07);
INSERT INTO steps VALUES(4,0,1,5.560681631015538251,1.0000000000000000198e+30,NULL,124,0.00058252700000000000139,2.1730000000000002013e-06,0.00022775900000000001265,0.00026305200000000000153,4.1100000000000001419e-07,8.8481000000000008861e-05,0.0,0.0,1,149120,2.2999999999999999489e-07,4404444,4404444,2.2999999999999999489e-07);
CREATE TABLE val_losses (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step INTEGER NOT NULL,
  loss REAL,
  PRIMARY KEY (run_id, step)
) WITHOUT ROWID;
INSERT INTO val_losses VALUES(1,2,5.5126562893973831691);
INSERT INTO val_losses VALUES(1,4,5.4819362722132920495);
INSERT INTO val_losses VALUES(2,2,5.5126562881857843478);
INSERT INTO val_losses VALUES(2,4,5.4819362710815013883);
CREATE TABLE poller_samples (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  t_s REAL NOT NULL,
  pid INTEGER NOT NULL,
  ppid INTEGER NOT NULL,
  role TEXT NOT NULL,
  rank INTEGER,
  rss_bytes INTEGER NOT NULL,
  pss_bytes INTEGER,
  command TEXT NOT NULL
);
INSERT INTO poller_samples VALUES(1,1,3.1205999999999999038e-05,18607,18604,'other',NULL,131072,34816,'/work/wt-straggler/build/trainscope train --model tiny --mode naive --reduce fused --batch 4 --block 32 --steps 4 --w...');
INSERT INTO poller_samples VALUES(2,2,1.5253000000000001176e-05,18622,18604,'launcher',NULL,0,38912,'/usr/bin/mpirun -np 2 --bind-to none --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo /work/wt-straggler/build...');
INSERT INTO poller_samples VALUES(3,2,0.26036627000000001075,18622,18604,'launcher',NULL,21245952,13239296,'/usr/bin/mpirun -np 2 --bind-to none --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo /work/wt-straggler/build...');
INSERT INTO poller_samples VALUES(4,2,0.26036627000000001075,18679,18622,'rank',0,16809984,5240832,'/work/wt-straggler/build/trainscope train --model tiny --mode sharded --reduce overlap --bucket-mb 0.001 --batch 4 --...');
INSERT INTO poller_samples VALUES(5,2,0.26036627000000001075,18686,18622,'rank',1,17166336,5325824,'/work/wt-straggler/build/trainscope train --model tiny --mode sharded --reduce overlap --bucket-mb 0.001 --batch 4 --...');
INSERT INTO poller_samples VALUES(6,2,0.49793293700000001988,18622,18604,'launcher',NULL,21245952,13254656,'/usr/bin/mpirun -np 2 --bind-to none --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo /work/wt-straggler/build...');
INSERT INTO poller_samples VALUES(7,2,0.49793293700000001988,18679,18622,'rank',0,20131840,6927360,'/work/wt-straggler/build/trainscope train --model tiny --mode sharded --reduce overlap --bucket-mb 0.001 --batch 4 --...');
INSERT INTO poller_samples VALUES(8,2,0.49793293700000001988,18686,18622,'rank',1,19509248,6654976,'/work/wt-straggler/build/trainscope train --model tiny --mode sharded --reduce overlap --bucket-mb 0.001 --batch 4 --...');
INSERT INTO poller_samples VALUES(9,2,0.74722920600000009017,18622,18604,'launcher',NULL,21245952,13255680,'/usr/bin/mpirun -np 2 --bind-to none --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo /work/wt-straggler/build...');
INSERT INTO poller_samples VALUES(10,2,0.74722920600000009017,18679,18622,'rank',0,24014848,10128384,'/work/wt-straggler/build/trainscope train --model tiny --mode sharded --reduce overlap --bucket-mb 0.001 --batch 4 --...');
INSERT INTO poller_samples VALUES(11,2,0.74722920600000009017,18686,18622,'rank',1,23760896,10144768,'/work/wt-straggler/build/trainscope train --model tiny --mode sharded --reduce overlap --bucket-mb 0.001 --batch 4 --...');
INSERT INTO poller_samples VALUES(12,2,1.0026157100000001598,18622,18604,'launcher',NULL,21245952,13255680,'/usr/bin/mpirun -np 2 --bind-to none --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo /work/wt-straggler/build...');
INSERT INTO poller_samples VALUES(13,2,1.0026157100000001598,18679,18622,'rank',0,24014848,10128384,'/work/wt-straggler/build/trainscope train --model tiny --mode sharded --reduce overlap --bucket-mb 0.001 --batch 4 --...');
INSERT INTO poller_samples VALUES(14,2,1.0026157100000001598,18686,18622,'rank',1,23760896,10148864,'/work/wt-straggler/build/trainscope train --model tiny --mode sharded --reduce overlap --bucket-mb 0.001 --batch 4 --...');
INSERT INTO poller_samples VALUES(15,2,1.2472781340000000938,18622,18604,'launcher',NULL,21245952,13255680,'/usr/bin/mpirun -np 2 --bind-to none --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo /work/wt-straggler/build...');
INSERT INTO poller_samples VALUES(16,2,1.2472781340000000938,18679,18622,'rank',0,24014848,10140672,'/work/wt-straggler/build/trainscope train --model tiny --mode sharded --reduce overlap --bucket-mb 0.001 --batch 4 --...');
INSERT INTO poller_samples VALUES(17,2,1.2472781340000000938,18686,18622,'rank',1,23760896,10157056,'/work/wt-straggler/build/trainscope train --model tiny --mode sharded --reduce overlap --bucket-mb 0.001 --batch 4 --...');
INSERT INTO poller_samples VALUES(18,2,1.5003360810000001546,18622,18604,'launcher',NULL,21245952,13255680,'/usr/bin/mpirun -np 2 --bind-to none --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo /work/wt-straggler/build...');
INSERT INTO poller_samples VALUES(19,2,1.5003360810000001546,18679,18622,'rank',0,24014848,10140672,'/work/wt-straggler/build/trainscope train --model tiny --mode sharded --reduce overlap --bucket-mb 0.001 --batch 4 --...');
INSERT INTO poller_samples VALUES(20,2,1.5003360810000001546,18686,18622,'rank',1,23760896,10157056,'/work/wt-straggler/build/trainscope train --model tiny --mode sharded --reduce overlap --bucket-mb 0.001 --batch 4 --...');
INSERT INTO poller_samples VALUES(21,4,2.7721000000000001065e-05,18920,18917,'other',NULL,0,4096,'[trainscope]');
INSERT INTO poller_samples VALUES(22,5,3.4651000000000004171e-05,18925,18922,'launcher',NULL,0,4096,'[mpirun]');
INSERT INTO poller_samples VALUES(23,5,0.25057173399999999041,18925,18922,'launcher',NULL,21303296,13245440,'[mpirun]');
INSERT INTO poller_samples VALUES(24,5,0.25057173399999999041,18929,18925,'rank',0,19451904,6497280,'/work/wt-straggler/build/trainscope allreduce-bench --min-bytes 8 --max-bytes 4096 --factor 8 --iters 3 --warmup 1 --...');
INSERT INTO poller_samples VALUES(25,5,0.25057173399999999041,18930,18925,'rank',1,19456000,6493184,'/work/wt-straggler/build/trainscope allreduce-bench --min-bytes 8 --max-bytes 4096 --factor 8 --iters 3 --warmup 1 --...');
INSERT INTO poller_samples VALUES(26,5,0.50085536900000005022,18925,18922,'launcher',NULL,21303296,13334528,'[mpirun]');
INSERT INTO poller_samples VALUES(27,5,0.50085536900000005022,18929,18925,'rank',0,16539648,5551104,'/work/wt-straggler/build/trainscope allreduce-bench --min-bytes 8 --max-bytes 4096 --factor 8 --iters 3 --warmup 1 --...');
INSERT INTO poller_samples VALUES(28,5,0.50085536900000005022,18930,18925,'rank',1,18702336,6163456,'/work/wt-straggler/build/trainscope allreduce-bench --min-bytes 8 --max-bytes 4096 --factor 8 --iters 3 --warmup 1 --...');
INSERT INTO poller_samples VALUES(29,6,1.7316000000000001583e-05,18935,18922,'launcher',NULL,0,4096,'[mpirun]');
INSERT INTO poller_samples VALUES(30,6,0.25631191300000000232,18935,18922,'launcher',NULL,21127168,13414400,'[mpirun]');
INSERT INTO poller_samples VALUES(31,6,0.25631191300000000232,18939,18935,'rank',0,19570688,6968320,'/work/wt-straggler/build/trainscope allreduce-bench --min-bytes 8 --max-bytes 4096 --factor 8 --iters 3 --warmup 1 --...');
INSERT INTO poller_samples VALUES(32,6,0.25631191300000000232,18940,18935,'rank',1,19607552,7045120,'/work/wt-straggler/build/trainscope allreduce-bench --min-bytes 8 --max-bytes 4096 --factor 8 --iters 3 --warmup 1 --...');
CREATE TABLE allreduce_rows (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  transport TEXT NOT NULL,
  links TEXT NOT NULL,
  world_size INTEGER NOT NULL,
  size_bytes INTEGER NOT NULL,
  count INTEGER NOT NULL,
  dtype TEXT NOT NULL,
  redop TEXT NOT NULL,
  time_us REAL,
  algbw_gbps REAL,
  busbw_gbps REAL,
  wrong INTEGER NOT NULL
);
INSERT INTO allreduce_rows VALUES(1,5,'shm','',2,8,2,'float32','sum',3951.8883333333328663,2.024348697437048437e-06,2.024348697437048437e-06,0);
INSERT INTO allreduce_rows VALUES(2,5,'shm','',2,64,16,'float32','sum',5314.2703333333338377,1.2043045608456376263e-05,1.2043045608456376263e-05,0);
INSERT INTO allreduce_rows VALUES(3,5,'shm','',2,512,128,'float32','sum',12776.09899999999834,4.0074830353146141865e-05,4.0074830353146141865e-05,0);
INSERT INTO allreduce_rows VALUES(4,5,'shm','',2,4096,1024,'float32','sum',24000.49766666666619,0.00017066312777708650774,0.00017066312777708650774,0);
INSERT INTO allreduce_rows VALUES(5,6,'tcp','1',2,8,2,'float32','sum',3976.0109999999999673,2.0120668680242584523e-06,2.0120668680242584523e-06,0);
INSERT INTO allreduce_rows VALUES(6,6,'tcp','1',2,64,16,'float32','sum',6665.1289999999999051,9.6022147508322789888e-06,9.6022147508322789888e-06,0);
INSERT INTO allreduce_rows VALUES(7,6,'tcp','1',2,512,128,'float32','sum',5322.0020000000004072,9.620439826967371261e-05,9.620439826967371261e-05,0);
INSERT INTO allreduce_rows VALUES(8,6,'tcp','1',2,4096,1024,'float32','sum',10845.647999999999228,0.0003776630036305806781,0.0003776630036305806781,0);
CREATE INDEX runs_suite_id ON runs(suite_id);
CREATE INDEX runs_status ON runs(status);
CREATE INDEX poller_samples_run_id ON poller_samples(run_id, t_s);
CREATE INDEX allreduce_rows_run_id ON allreduce_rows(run_id, size_bytes);
COMMIT;
