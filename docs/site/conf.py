# Sphinx configuration of the collection's documentation site (make docs, scripts/build-docs.sh).
# Started from `antsibull-docs sphinx-init` (antsibull-docs 2.28.0); intersphinx is left out because
# the build runs offline, so references to other collections' docs are plain links.

project = 'baremetal.gpu'
copyright = 'baremetal.gpu maintainers'  # pylint: disable=redefined-builtin
title = 'baremetal.gpu collection documentation'
html_short_title = 'baremetal.gpu'

extensions = ['sphinx.ext.autodoc', 'sphinx_antsibull_ext', 'myst_parser']

# The user guide (docs/*.md, copied under guide/ by scripts/build-docs.sh) is Markdown; its links to sections
# (page.md#heading) resolve through the anchors GitHub gives headings.
source_suffix = {'.rst': 'restructuredtext', '.md': 'markdown'}
myst_heading_anchors = 4

pygments_style = 'ansible'
highlight_language = 'YAML+Jinja'

html_theme = 'sphinx_ansible_theme'
html_show_sphinx = False
display_version = False
html_use_smartypants = True
html_use_modindex = False
html_use_index = False
html_copy_source = False

default_role = 'any'
nitpicky = True
