"""The translation workbench (`metnos-prompts`, the nightly sweep): every text Metnos shows, as
layers a language can be added to, checked, translated and promoted in (SPEC §9).

A feature above the rings it reads: `metnos.ground.i18n` only looks texts up, and knows nothing of
this package. Import the submodules directly (`metnos.features.languages.admin`, `.sweep`, ...).
"""
