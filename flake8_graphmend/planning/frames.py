"""Fixes that would cost a graph: a break in a loop must not become the first of its frame.

Dynamo compiles the code before a break as a graph and goes on in a new frame after it,
except when the break is in a loop: then it runs the whole frame eagerly (torch 2.13: "graph
break in a for/while loop", GB7000). A function that prints, then breaks in a loop, compiles
the code before the print; fix the print, and the break in the loop is the frame's first, so
nothing of the function is compiled. The fixes of the sites between the last certain break
and the first break left in a loop are declined (after all sites are planned, since which
sites stay depends on every plan of the function). Where the break in the loop happens only
under a condition (``self.training``), the fixes stay, each with a caveat that names the cost.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Sequence

from . import Position

if TYPE_CHECKING:
    from ..rules.base import Finding, Site


def keep_frames(sites: Sequence["Site"]) -> List["Finding"]:
    """The findings of one function's ``sites``, with the fixes declined (or, where that
    break is conditional, cautioned) that would leave a break in a loop the first of its
    frame."""
    by_position = {site.position: site for site in sites}
    owners: Dict[Position, "Site"] = {}  # a covered site: the site whose fix rewrites it
    for site in sites:
        if site.finding.plan is not None:
            for covered in site.finding.plan.covers():
                owners.setdefault(covered, site)
    ordered = sorted(sites, key=lambda s: s.position)

    def fixed(site: "Site") -> bool:
        return site.finding.plan is not None or site.position in owners

    first = _first_break_left_in_loop(ordered, by_position, fixed)
    if first is None:
        return [site.finding for site in sites]
    where = f"line {first.finding.line} ({first.finding.code})"
    frame = (
        "the first break of its frame, and Dynamo runs such a frame wholly eagerly, the graph "
        "before this line included"
    )
    changed: Dict[Position, "Finding"] = {}
    for site in reversed(ordered[: ordered.index(first)]):
        if site.in_loop and fixed(site):
            continue  # in the original too, a break in a loop starts the eager frame
        if fixed(site):
            owner = site if site.finding.plan is not None else owners[site.position]
            if first.certain:  # the fix costs the graph whenever it removes a break
                reason = f"the next break left, {where}, is in a loop: fixed, this one would "
                _decline(owner, reason + f"leave it {frame}", by_position, changed)
            elif owner.position not in changed:  # it does only when that one breaks
                condition = first.finding.condition or "the data say so"
                changed[owner.position] = owner.cautioned(
                    f"when {condition}, the break of {where} is in a loop and becomes {frame}"
                )
        if site.certain and not site.in_loop and (first.certain or not fixed(site)):
            break  # a break that stays: the frame of the loop starts there
    return [changed.get(site.position, site.finding) for site in sites]


def _first_break_left_in_loop(
    ordered: Sequence["Site"],
    by_position: Dict[Position, "Site"],
    fixed: Callable[["Site"], bool],
) -> Optional["Site"]:
    """The first site in a loop that the fixes leave, where Dynamo traces it: not after a
    break left where Dynamo stops tracing the function."""
    for site in ordered:
        if not site.in_loop or fixed(site):
            continue
        shadow = by_position.get(site.shadowed_by) if site.shadowed_by else None
        if shadow is None or fixed(shadow):
            return site
    return None


def _decline(
    owner: "Site", reason: str, by_position: Dict[Position, "Site"], done: Dict[Position, "Finding"]
) -> None:
    """Decline ``owner``'s fix and those of the sites it rewrites along with its own."""
    if owner.position in done:
        return
    plan = owner.finding.plan
    done[owner.position] = owner.declined(reason)
    for covered in sorted(plan.covers() if plan is not None else ()):
        site = by_position.get(covered)
        if site is None or covered in done:
            continue
        if site.finding.plan is not None:
            _decline(site, reason, by_position, done)
        else:
            done[covered] = site.declined(
                f"the fix of line {owner.finding.line} that would take it is declined: {reason}"
            )
