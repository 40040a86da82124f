"""`python -m zocrates_nb.sample`: render the sample's PDFs again (the `samples` extra)."""

from zocrates_nb.sample import render

for rendered in render():
    print(rendered)
