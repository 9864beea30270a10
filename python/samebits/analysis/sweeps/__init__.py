"""The measures and plots of the sweeps in experiments/sweeps/ beyond what a sweep's own report
draws (docs/studies/*.md), each a module run on a sweep's output folder:

    PYTHONPATH=python /usr/bin/python3 -m samebits.analysis.sweeps.layouts runs/sweeps/layouts docs/studies/layouts
    PYTHONPATH=python /usr/bin/python3 -m samebits.analysis.sweeps.tp_muon runs/sweeps/tp_muon docs/studies/tp_muon
    PYTHONPATH=python /usr/bin/python3 -m samebits.analysis.sweeps.tp_muon_ortho runs/sweeps/tp_muon_last

They only read run files (samebits.analysis.runfile, and the kept states of their stores: states).
"""
